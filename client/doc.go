// Package client is sluice's official Go client: it batches events,
// publishes them to one or more gateways over gRPC, and retries what the
// gateway says may be retried.
//
//	c, err := client.New([]string{"ingest.example.com:443"},
//		client.WithTLS(&tls.Config{}), client.WithAPIKey(key))
//	results, err := c.Publish(ctx, ev1, ev2) // or c.Send(ctx, ev, done)
//	err = c.Close(ctx)
//
// # Guarantees
//
//   - Every event handed over (Send returned nil, or Publish took it) gets
//     exactly one final result: success (ACCEPTED or DUPLICATE), a
//     *RejectionError, or an *UndeliveredError. Send's done is called once
//     with it, on a goroutine of the client's.
//   - An event without an id gets a UUIDv7 at Send, one without
//     occurred_at the clock's now, in a copy: the caller's *Event is never
//     changed. The copy shares the payload and attributes, which must not
//     change until the final result (a retry would carry other bytes under
//     the same id: IDEMPOTENCY_CONFLICT).
//   - An event's id and bytes never change across retries, so the gateway
//     publishes it at most once within its dedup window; a DUPLICATE
//     answer is a success.
//   - A *RejectionError is permanent (the same event would be refused
//     again) and is never retried. Retryable answers are retried after
//     the answer's retry_after, else a full-jitter backoff (Backoff). A
//     request refused as too large is split in halves, which is not an
//     attempt. What an answer means is decided in one function, judge.
//   - RATE_LIMITED and BUFFER_FULL are about what all of the client's
//     requests share: every sender waits out the retry_after, then
//     requests go one at a time until two in a row are not refused so.
//   - An event ends as an *UndeliveredError after MaxAttempts judged
//     requests (answers with a retry_after do not count), or when
//     EventTimeout from Send would pass before its next attempt. A
//     request's deadline is RequestTimeout, cut short to the latest
//     EventTimeout of its events.
//   - Close stops taking events, sends what is buffered without lingering
//     and waits for every final result. If its ctx ends first, requests in
//     flight are cancelled, every event still without a final result ends
//     as an *UndeliveredError, and Close returns one *UndeliveredError
//     naming exactly those events. Such an event may have reached Kafka
//     (its answer was lost); sending it again under its id is safe.
//
// # Bounds
//
// The client holds at most MaxBufferedEvents events and MaxBufferedBytes
// bytes (proto.Size of each event) from Send to final result, whether
// buffered, in flight or waiting to be retried. At the bound Send waits
// for room until its ctx ends, or with FailWhenFull returns ErrBufferFull.
// An event larger than MaxBufferedBytes is let in only when the client
// holds nothing else. At most MaxInFlight requests await an answer at
// once, over all addresses. A request carries at most MaxBatchEvents
// events and MaxBatchBytes bytes (an event larger than that goes alone).
//
// # Order
//
// Events keep their Send order within a request. Requests go round robin
// over the addresses, up to MaxInFlight at once, and the gateway judges
// concurrent requests concurrently, so events with the same partition key
// keep their order in Kafka only with MaxInFlight(1) and while nothing is
// retried: a retried event may land after events sent later.
//
// # Connections
//
// One gRPC connection per address, connecting lazily; with UseStream, one
// PublishStream per connection, reopened when it ends. The API key is
// sent as x-api-key metadata. New refuses to start without WithTLS, and
// WithInsecure is taken only for loopback addresses.
//
// New starts a batcher and MaxInFlight senders (and a reader per stream);
// Close stops and waits for all of them. Metrics and done callbacks run on
// them: a callback that waits on the client (Send into a full buffer,
// Flush, Close) may wait forever.
//
// # What it does not do
//
// It does not persist events: what is buffered is lost with the process.
// It does not reorder or deduplicate on its own: the gateway's dedup
// window does, by (source, id). It does not validate events against their
// contracts; the gateway does. It does not speak REST.
package client
