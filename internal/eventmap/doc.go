// Package eventmap turns a JSON document, and the headers it came with,
// into an event: the one mapping of the pollers (each item of a partner's
// page) and of the webhook endpoint (each delivery's body). Package
// jsonpointer reads the document.
//
// # Usage
//
//	m, err := eventmap.New(eventmap.Config{
//		ID:         eventmap.Header("X-GitHub-Delivery"),
//		Type:       eventmap.TypeFrom(eventmap.Header("X-GitHub-Event")),
//		Types:      map[string]string{"push": "github.v1.Push"},
//		OccurredAt: eventmap.Pointer("/head_commit/timestamp"),
//	})
//	ev, err := m.Map(eventmap.Input{Doc: body, Header: r.Header, Time: received})
//	var fe *eventmap.FieldError      // errors.As: the document does not map; fe.Field says which field
//	var ut *eventmap.UnknownTypeError // errors.As: the provider's type maps to no contract (UNKNOWN_EVENT_TYPE)
//
// # The mapping
//
// Each field of the event comes from a Source: a JSON pointer (RFC 6901)
// into the document, or, for a document that came with a request, one of
// its headers.
//
//   - id: a string or an integer (kept as written, never rounded).
//     Required.
//   - type: a contract type that every document maps to (the pollers'
//     way), or the provider's own type, read from a Source and looked up
//     in Types (provider type -> contract type). A provider type Types
//     lacks maps to DefaultType when that is set, and is otherwise an
//     *UnknownTypeError.
//   - occurred_at: an RFC 3339 string or Unix seconds, fractions allowed
//     (in JSON a number; in a header digits, as Standard Webhooks'
//     webhook-timestamp, or RFC 3339, as X-Shopify-Triggered-At). Without
//     a Source it is
//     Input.Time: the page's fetch time, the signature's timestamp, the
//     time of receipt; the caller says which.
//   - partition_key: a string or a number. Without a Source, or when the
//     value is missing or null, it is empty, and the gateway keys the
//     event by its id.
//   - payload: the JSON object at Payload, "" being the whole document;
//     carried as the contract message's JSON (Event.payload.json) for the
//     gateway to check against the contract.
//
// A header that a Source names must appear once: a missing one is
// an error (but for partition_key, where it means none), and one that
// appears more than once is refused, since which value names the event
// would be a guess.
//
// # Configuration
//
// Config is the YAML block "mapping" of a poller and of a webhook source.
// A Source is written as a pointer ("id: /id"), or as {pointer: /id} or
// {header: X-GitHub-Delivery}; type as a contract type ("type:
// shop.v1.OrderPlaced") or as a Source of the provider's type ("type:
// {header: X-GitHub-Event}", or "type: /type", since no contract type
// starts with '/'). Validate names the first wrong field. It
// checks syntax only: pointers, header names, contract type names. That
// each contract type is loaded, and that the source may publish it, is
// the caller's to check (ContractTypes lists them).
//
// # What it does not do
//
// It does not check the event against the envelope's rules or the
// contract (the gateway does, as for every event), nor verify where the
// document came from.
package eventmap
