// Package webhook verifies signed webhook deliveries: a sender's HMAC over
// the raw body (and, by scheme, an id and a timestamp), checked against
// the source's secrets before anything in the body is believed. It only
// verifies: reading the body under its bounds, dedup by delivery id, and
// mapping a delivery to an event are the gateway's.
//
//	v, err := webhook.New(cfg)           // reads the secrets; errors name the field
//	d, err := v.Verify(webhook.Request{Header: r.Header, Body: body})
//	// err: *Refusal (401, never retryable) or ErrClosed
//	// d.ID, d.Timestamp: what the signature covers besides the body
//
// # Schemes
//
// standard (Standard Webhooks), stripe, github, shopify, and hmac (a
// configured header, hash and encoding). Each is checked as its
// provider's own library checks it: their test vectors and signers are
// this package's tests. scheme.go names each one's headers, signed string
// and secret form, and the differences.
//
// # Refusals
//
// Every refusal is a *Refusal whose Reason is one of
//
//	missing_header    a header the scheme signs with is absent or empty
//	malformed_header  one is there but unreadable: not the scheme's form, sent
//	                  twice, over MaxHeaderBytes, over MaxSignatures entries,
//	                  or no v1 signature among them
//	bad_signature     no signature matches under any secret
//	stale_timestamp   signed more than Tolerance ago
//	future_timestamp  signed more than Tolerance ahead
//
// All are permanent for the request as sent: the gateway answers 401. The
// checks run in that order (headers, then the window, then the MACs), so a
// stale delivery is refused before any MAC is computed. Nothing a sender
// sent is quoted in a refusal, only header names and counts.
//
// # Replay
//
// The timestamp bounds how old a replayed delivery can be; the gateway's
// dedup window, keyed by (source, id), refuses a replay inside it. Keep
// the dedup window at least Tolerance long, so that every replay a
// timestamp lets through is a DUPLICATE. A consumer can verify a delivery
// again from the body as received and the values of SignatureHeaders,
// with the same secret: a check of the signature, not of the window.
//
// # Secrets
//
// Secrets come from files (secret_files, read again when the file
// changes, checked at most once a second: internal/secret) or environment
// variables (secret_env, read at start), never from config text. Several
// secrets are all accepted, for rotation; Delivery.Secret says which one
// verified. A secret file that becomes unreadable or empty keeps the
// secret before and is logged. Secrets are never logged or in an error;
// MACs are compared with hmac.Equal, in constant time.
//
// # Bounds
//
// Verify's work is bounded whatever is sent: each header at most
// MaxHeaderBytes (4 KiB), a signature list at most MaxSignatures (16)
// entries, one MAC per secret (at most MaxSecrets, 4) however many
// signatures the header carries. The body's bound and read deadline are
// the caller's. No goroutine is started; Close makes later Verify calls
// answer ErrClosed.
package webhook
