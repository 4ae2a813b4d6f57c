package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/contract"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Compression (Content-Encoding gzip or zstd) and Grpc-Timeout are said in
// the operation's description, not as parameters: a generated request
// that set them without compressing would be refused, as it should be.

const openAPIComponents = "#/components/schemas/"

// Limits are the gateway's limits (gateway.LimitsConfig) that the
// description states.
type Limits struct {
	MaxEventsPerRequest int
	MaxRequestBytes     int
	MaxEventAge         time.Duration
	MaxEventFuture      time.Duration
}

// describe builds the description of registry under l; its error is a bug (a
// schema that does not marshal).
func describe(registry *contract.Registry, l Limits) ([]byte, error) {
	schemas := map[string]any{}
	defs := map[string]*contract.Schema{}
	var events []any
	for _, typ := range registry.Types() {
		c, _ := registry.Lookup(typ)
		payload, err := c.JSONSchema(defs, openAPIComponents)
		if err != nil {
			return nil, fmt.Errorf("gateway: openapi: %s: %w", typ, err)
		}
		name := "Event." + typ
		schemas[name] = eventSchema(l, typ, payload)
		events = append(events, map[string]any{"$ref": openAPIComponents + name})
	}
	for name, def := range defs {
		schemas[name] = def
	}
	items := map[string]any{"anyOf": events}
	if len(events) == 0 {
		items = map[string]any{"not": map[string]any{}}
	}
	schemas["PublishRequest"] = map[string]any{
		"type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"events": map[string]any{"type": []string{"array", "null"}, "maxItems": l.MaxEventsPerRequest, "items": items},
		},
	}
	for name, schema := range answerSchemas() {
		schemas[name] = schema
	}

	responses := map[string]any{}
	for code, desc := range publishStatuses {
		r := map[string]any{"description": desc.text, "content": jsonContent(desc.body)}
		if desc.retryAfter {
			r["headers"] = map[string]any{"Retry-After": map[string]any{
				"description": "Seconds to wait before sending the refused events again.",
				"schema":      map[string]any{"type": "string", "pattern": "^[0-9]+$"},
			}}
		}
		responses[strconv.Itoa(code)] = r
	}
	op := map[string]any{
		"operationId": "publish",
		"summary":     "Publish a batch of events",
		"description": fmt.Sprintf("Judges each event on its own and answers once every accepted event is durable, "+
			"one result per event in request order. The body may be sent with Content-Encoding gzip or zstd; "+
			"limits.max_request_bytes (%d) bounds it on the wire and inflated (DECOMPRESSED_TOO_LARGE). "+
			"A Grpc-Timeout header, when sent, is the request's deadline.", l.MaxRequestBytes),
		"security": []any{map[string]any{"apiKey": []string{}}, map[string]any{"bearer": []string{}}},
		"requestBody": map[string]any{
			"required": true,
			"content":  jsonContent(map[string]any{"$ref": openAPIComponents + "PublishRequest"}),
		},
		"responses": responses,
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "sluice ingest",
			"version": "v1",
			"description": "Publish events to this gateway over REST. gRPC (sluice.ingest.v1.IngestService) takes " +
				"the same events and answers with the same results.",
		},
		"servers": []any{map[string]any{"url": "/",
			"description": "The gateway that served this description, at the scheme, host and port the client reached it by."}},
		"paths": map[string]any{"/v1/events": map[string]any{"post": op}},
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-Api-Key"},
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "The API key as a bearer token."},
			},
		},
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("gateway: openapi: %w", err)
	}
	return out.Bytes(), nil
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// publishStatus is one status POST /v1/events answers.
type publishStatus struct {
	text       string
	body       any
	retryAfter bool
}

var (
	eitherBody = map[string]any{"anyOf": []any{
		map[string]any{"$ref": openAPIComponents + "PublishResponse"},
		map[string]any{"$ref": openAPIComponents + "ErrorBody"},
	}}
	resultsBody = map[string]any{"$ref": openAPIComponents + "PublishResponse"}
	errorBody   = map[string]any{"$ref": openAPIComponents + "ErrorBody"}
)

// publishStatuses are the route's answers (the gateway's batchHTTPStatus
// and its rejection table): a status every event shares is the
// batch's, with the per-event results; a whole-request refusal has the
// ErrorBody.
var publishStatuses = map[int]publishStatus{
	http.StatusOK:                    {text: "Every event was ACCEPTED or DUPLICATE.", body: resultsBody},
	http.StatusMultiStatus:           {text: "Some events were accepted and some REJECTED; each result says which.", body: resultsBody},
	http.StatusBadRequest:            {text: "MALFORMED: the body, or every event, could not be decoded.", body: eitherBody},
	http.StatusUnauthorized:          {text: "UNAUTHENTICATED: no valid API key or client certificate; the body was not read.", body: errorBody},
	http.StatusForbidden:             {text: "FORBIDDEN_EVENT_TYPE for every event.", body: eitherBody},
	http.StatusConflict:              {text: "IDEMPOTENCY_CONFLICT for every event: each id was accepted with another payload.", body: resultsBody},
	http.StatusRequestEntityTooLarge: {text: "BATCH_TOO_LARGE, DECOMPRESSED_TOO_LARGE or EVENT_TOO_LARGE: over limits.max_request_bytes, max_events_per_request or max_event_bytes.", body: eitherBody},
	http.StatusUnprocessableEntity:   {text: "No event was accepted, for reasons that differ or are per event (SCHEMA_VIOLATION, UNKNOWN_EVENT_TYPE, EVENT_TIME_OUT_OF_RANGE).", body: eitherBody, retryAfter: true},
	http.StatusTooManyRequests:       {text: "RATE_LIMITED: the source is over its rate.", body: eitherBody, retryAfter: true},
	http.StatusServiceUnavailable:    {text: "UNAVAILABLE or BUFFER_FULL: Kafka did not acknowledge in time, the spool is full, or the gateway is at its memory bound.", body: eitherBody, retryAfter: true},
}

// occurredAtPattern is what the gateway's REST decoder takes as occurred_at: Go's
// time.Parse of RFC 3339, which also reads a one-digit hour, a fraction
// after a comma and of any length, and an offset of up to 24 hours and 60
// minutes. It is wider by days past their month's end and instants
// outside years 1 to 9999, which are refused.
const occurredAtPattern = `^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01]?[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]` +
	`(?:[.,][0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-4]):(?:[0-5][0-9]|60))$`

// eventSchema is one event of type typ as the gateway's REST decoder takes
// it: the envelope rules of ingest.proto and the payload.
// null is an absent field, as the decoder reads it.
func eventSchema(l Limits, typ string, payload *contract.Schema) map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false,
		"required": []string{"id", "type", "occurred_at", "payload"},
		"properties": map[string]any{
			"id": map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$",
				"description": "The idempotency key: the same (source, id) within the dedup window is answered DUPLICATE."},
			"type": map[string]any{"const": typ},
			"occurred_at": map[string]any{
				// No "format": generated clients would parse it with their
				// own date-time type, which may refuse what Go's RFC 3339
				// parser takes (nanoseconds, among others).
				"type": "string", "pattern": occurredAtPattern,
				"description": fmt.Sprintf("An RFC 3339 date-time, as Go's time.Parse reads one, years 1 to 9999. It must be no more than %s before and %s after the gateway's clock, "+
					"or the event is EVENT_TIME_OUT_OF_RANGE.", l.MaxEventAge, l.MaxEventFuture),
				"x-sluice-event-time-window": map[string]any{
					"max_age_seconds":    int64(l.MaxEventAge.Seconds()),
					"max_future_seconds": int64(l.MaxEventFuture.Seconds()),
				},
			},
			"partition_key": map[string]any{"type": []string{"string", "null"}, "maxLength": 256,
				"description": "Events with the same key keep their order; empty or null means the event id."},
			"payload": payload,
			"attributes": map[string]any{
				"type": []string{"object", "null"}, "maxProperties": 16,
				"propertyNames":        map[string]any{"minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9][a-z0-9._-]*$"},
				"additionalProperties": map[string]any{"type": "string", "maxLength": 256},
				"description":          "Carried to Kafka as record headers sluice-attr-<key>.",
			},
		},
	}
}

// decimalString is a 64-bit integer as protojson prints it, a string of
// decimal digits: never negative where it is used.
func decimalString(what string) map[string]any {
	return map[string]any{"type": "string", "pattern": "^[0-9]+$",
		"description": what + ", in decimal digits: protobuf's JSON writes 64-bit integers as strings."}
}

// answerSchemas are the bodies the route answers, as the gateway's
// appendAnswer and writeFailure print them.
func answerSchemas() map[string]any {
	names := func(m map[int32]string) []string {
		var out []string
		for n, name := range m {
			if n != 0 {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out
	}
	reason := map[string]any{"type": "string", "enum": names(ingestv1.Reason_name)}
	violation := map[string]any{
		"type": "object", "required": []string{"field", "rule", "message"},
		"properties": map[string]any{
			"field":   map[string]any{"type": "string"},
			"rule":    map[string]any{"type": "string"},
			"message": map[string]any{"type": "string"},
		},
	}
	refusal := func(extra string) map[string]any {
		return map[string]any{
			"type": "object", "required": []string{"reason", "retryable", "violations", "message"},
			"description": extra,
			"properties": map[string]any{
				"reason":      map[string]any{"$ref": openAPIComponents + "Reason"},
				"retryable":   map[string]any{"type": "boolean"},
				"retry_after": map[string]any{"type": "string", "pattern": `^[0-9]+(?:\.[0-9]{1,9})?s$`},
				"violations":  map[string]any{"type": "array", "items": map[string]any{"$ref": openAPIComponents + "FieldViolation"}},
				"message":     map[string]any{"type": "string"},
				"conflict": map[string]any{"$ref": openAPIComponents + "PayloadConflict",
					"description": "With IDEMPOTENCY_CONFLICT: the fingerprints of the payload refused and of the one accepted under the same id."},
			},
		}
	}
	return map[string]any{
		"Reason":         reason,
		"FieldViolation": violation,
		"PayloadConflict": map[string]any{
			"type": "object", "required": []string{"fingerprint", "accepted_fingerprint"},
			"description": "A payload's fingerprint is \"sha256:\" and lowercase hex digits of the SHA-256 of its canonical protobuf binary, as the sinks keep it in payload_fingerprint.",
			"properties": map[string]any{
				"fingerprint": map[string]any{"type": "string", "description": "The refused payload's fingerprint, whole."},
				"accepted_fingerprint": map[string]any{"type": "string",
					"description": "The accepted payload's fingerprint; when the dedup window caught the conflict, its first 16 hex digits (the 64 bits the window keeps)."},
			},
		},
		"Rejection": refusal("Why one event was refused and whether sending it again may succeed."),
		"ErrorBody": refusal("A whole-request refusal."),
		"EventResult": map[string]any{
			"type": "object", "required": []string{"index", "id", "outcome"},
			"properties": map[string]any{
				"index":      map[string]any{"type": "integer", "minimum": 0},
				"id":         map[string]any{"type": "string"},
				"outcome":    map[string]any{"type": "string", "enum": names(ingestv1.Outcome_name)},
				"durability": map[string]any{"type": "string", "enum": names(ingestv1.Durability_name)},
				"rejection":  map[string]any{"$ref": openAPIComponents + "Rejection"},
				"kafka": map[string]any{"$ref": openAPIComponents + "KafkaPosition",
					"description": "Where Kafka holds the event's record: on an ACCEPTED event with durability KAFKA, and on a DUPLICATE whose original it was."},
				"spool": map[string]any{"$ref": openAPIComponents + "SpoolPosition",
					"description": "Where the answering gateway's spool holds the event's record until it is published to Kafka: on an ACCEPTED event with durability LOCAL_DISK, and on a DUPLICATE whose original it was."},
			},
			// One position at most (the oneof position).
			"not": map[string]any{"required": []string{"kafka", "spool"}},
		},
		"KafkaPosition": map[string]any{
			"type": "object", "required": []string{"topic", "partition", "offset"}, "additionalProperties": false,
			"properties": map[string]any{
				"topic":     map[string]any{"type": "string", "minLength": 1},
				"partition": map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxInt32},
				"offset":    decimalString("The record's offset in the partition"),
			},
		},
		"SpoolPosition": map[string]any{
			"type": "object", "required": []string{"segment", "offset"}, "additionalProperties": false,
			"properties": map[string]any{
				"segment": decimalString("The spool segment's index, the number in its file name"),
				"offset":  decimalString("The byte offset of the record's frame in the segment"),
			},
		},
		"PublishResponse": map[string]any{
			"type": "object", "required": []string{"results"},
			"properties": map[string]any{
				"results": map[string]any{"type": "array", "items": map[string]any{"$ref": openAPIComponents + "EventResult"}},
			},
		},
	}
}
