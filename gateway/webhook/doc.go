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
// Each is checked as its provider's own library checks it (their test
// vectors and signers are this package's tests), with the differences
// named:
//
//   - standard (Standard Webhooks): webhook-id, webhook-timestamp (Unix
//     seconds) and webhook-signature, a space-separated list of
//     "v1,<base64>". The MAC is HMAC-SHA256 over "<id>.<timestamp>.<body>".
//     Other versions (v1a) are passed over. Secrets are "whsec_<base64>"
//     or the base64 alone, and key the MAC decoded. Delivery.ID is the
//     webhook-id, Delivery.Timestamp the webhook-timestamp.
//   - stripe: Stripe-Signature "t=<unix>,v1=<hex>,v1=<hex>,v0=…", HMAC-SHA256
//     over "<t>.<body>", any v1 against any secret; v0 and other keys are
//     passed over. The secret ("whsec_…") keys the MAC as the text it is,
//     as stripe-go does: it is not decoded. Delivery.Timestamp is t; the
//     event id is in the body.
//   - github: X-Hub-Signature-256 "sha256=<hex>", HMAC-SHA256 over the
//     body; no timestamp, no signed id (X-GitHub-Delivery is not signed
//     apart from the body).
//   - shopify: X-Shopify-Hmac-Sha256, base64 of HMAC-SHA256 over the body;
//     no timestamp, no signed id.
//   - hmac: one signature in HMACConfig.Header, after an optional Prefix,
//     sha256 or sha512, hex or base64. With TimestampHeader, the signed
//     string is "<timestamp><signed_separator><body>" with the timestamp's
//     value as sent, and that value is Unix seconds (decimal digits) or
//     RFC 3339 (a 'T', a zone, fractions allowed); without it, the body.
//
// Timestamps of standard and stripe are decimal digits only (no sign, no
// space); the MAC covers their decimal value as the providers' libraries
// write it. Hex is read in either case; base64 signatures are standard,
// padded and canonical, so a signature has one spelling, as the libraries
// that compare text have it.
//
// # Refusals
//
// Every refusal is a *Refusal whose Reason is one of
//
//	missing_header    a header the scheme signs with is absent or empty
//	malformed_header  one is there but unreadable: not the scheme's form, sent
//	                  twice, over MaxHeaderBytes, over MaxSignatures entries,
//	                  or no v1 signature among them
//	bad_signature     no signature matches under any secret (a wrong secret,
//	                  another body, id or timestamp than was signed)
//	stale_timestamp   signed more than Tolerance ago
//	future_timestamp  signed more than Tolerance ahead
//
// All are permanent for the request as sent: the gateway answers 401, and a
// sender's retry of the same request is refused the same way. The checks
// run in that order (headers, then the window, then the MACs), so a
// delivery with a stale timestamp is refused before any MAC is computed.
// Stripe's library checks only that a timestamp is not too old; this
// package refuses one too far ahead as well, as Standard Webhooks does.
// Nothing a sender sent is quoted in a refusal's Msg, only header names
// and counts.
//
// # Replay
//
// The timestamp bounds how old a replayed delivery can be; the gateway's
// dedup window, keyed by (source, id), refuses a replay inside it. Keep
// the dedup window at least Tolerance long, so that every replay a
// timestamp lets through is a DUPLICATE.
//
// # Verifying again downstream
//
// A consumer verifies a delivery again from the body as received, byte for
// byte, and the values of SignatureHeaders (the headers the scheme signs
// with), with the same secret. Its timestamp will be older than the
// tolerance by then: such a check is of the signature, not of the window.
//
// # Secrets
//
// Secrets come from files (secret_files, one secret each, read again when
// the file changes, checked at most once a second as deliveries arrive:
// see internal/secret) or environment variables
// (secret_env, read at start), never from config text. A file's one
// trailing line ending is trimmed. Several secrets are all accepted (for
// rotation: add the new one, let the sender switch, remove the old);
// Delivery.Secret says which one verified. A secret file that becomes
// unreadable or empty keeps the secret before and is logged. Secrets are
// never logged, never in an error or a refusal; the MAC of each is
// compared with each candidate by hmac.Equal, in constant time.
//
// # Bounds
//
// Verify's work is bounded whatever is sent: each header it reads is at
// most MaxHeaderBytes (4 KiB), a signature list at most MaxSignatures (16)
// entries, and it computes one MAC per secret (at most MaxSecrets, 4)
// however many signatures the header carries; comparisons are MaxSignatures
// × MaxSecrets at most, each of 32 or 64 bytes. The body's bound and read
// deadline are the caller's. No goroutine is started; Close makes later
// Verify calls answer ErrClosed.
package webhook
