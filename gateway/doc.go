// Package gateway is sluice's front door: the sluice.ingest.v1 IngestService
// over gRPC and, as a route on grpc-gateway's mux, over REST (POST
// /v1/events).
//
// # What happens to a request
//
//  1. The caller's source is found from its API key (x-api-key, or
//     Authorization: Bearer) or, without one, from its verified client
//     certificate, from the headers and the connection alone: on gRPC in
//     the server's tap, before the call takes any place or its message is
//     read; on REST in a handler before the body is read. A caller that is
//     not a source is refused UNAUTHENTICATED (401) and holds nothing an
//     authenticated one needs; gRPC health and reflection, open to all,
//     count such a caller in a share of its own (UnauthenticatedStreams).
//     Keys are stored as SHA-256 digests only.
//  2. The request's memory is charged to RequestMemoryBytes before it is
//     read (UNAVAILABLE, unread, when there is no room in time); a body or
//     message over MaxRequestBytes is BATCH_TOO_LARGE (REST from its
//     Content-Length, unread). A compressed one is bounded twice: its bytes
//     on the wire as above, and its decompressed size by MaxRequestBytes
//     too, DECOMPRESSED_TOO_LARGE past it (see Compression).
//  3. The envelope is decoded by sluice's own strict decoders
//     (envelope.go): duplicate JSON keys, names in another letter case,
//     unknown or mistyped fields, lone surrogates, invalid UTF-8 and
//     Timestamps out of range are MALFORMED, and decoding stops at event
//     MaxEventsPerRequest+1 (BATCH_TOO_LARGE). What breaks the structure
//     refuses the request; what is wrong inside one event refuses that
//     event, and the others are judged.
//  4. The source's token bucket, which is charged one token per event and
//     answers RATE_LIMITED with the exact wait as retry_after.
//  5. Each event on its own: envelope rules (protovalidate on Event), the
//     source's allowed types, a loaded contract for the type, the payload
//     size, the occurred_at skew window, then decode and protovalidate
//     against the contract (package contract).
//  6. The dedup window: an (source, event id) accepted within the window
//     with the same payload is answered DUPLICATE and not published again,
//     with the position the accepted one was answered with; with another
//     payload it is refused IDEMPOTENCY_CONFLICT (see Identity). While one
//     attempt of an id is being published, others wait for its outcome, so
//     concurrent retries make one record and no caller is told DUPLICATE
//     for an event that then fails.
//  7. The surviving events are handed to admission (admission.Admission) in
//     request order, so one key keeps its order, and each is answered
//     ACCEPTED only once it is durable: acknowledged by Kafka with acks=all
//     (durability KAFKA) or fsync'd in the local spool while Kafka pushes
//     back (durability LOCAL_DISK), and with where (see Positions).
//
// # Positions
//
// An ACCEPTED result says where its event's record is, in its position:
// kafka (topic, partition, offset: a consumer reading that partition from
// that offset gets the record first) with durability KAFKA, spool (the
// spool's segment and the record's frame offset in it, buffer.Position)
// with LOCAL_DISK. A spool position is the answering gateway's own: the
// record is there until the drainer has published it to Kafka, and the
// answer does not learn where that puts it. A DUPLICATE carries the
// position its original was answered with, which the dedup window keeps
// with the id (two words an id, within dedupBytesPerEntry); past the
// window, or once the bound forgets the id, the event is new again and a
// resend is published and answered at a position of its own. REST prints
// positions with protojson's names and forms: "kafka": {"topic",
// "partition", "offset"} and "spool": {"segment", "offset"}, the 64-bit
// numbers as decimal strings. A batch's accepted results and their Kafka
// positions are one allocation, the spool positions one more. Answers are
// written without reflection: REST's JSON by appendAnswer, gRPC's
// protobuf by the server codec (marshalAnswer), each held to what
// protojson and proto.Marshal write by a fuzz test.
//
// # Identity
//
// An event's (source, id) names one event: its idempotency key. Sent
// again with the same payload it is a DUPLICATE, a success; sent with
// another payload it is refused IDEMPOTENCY_CONFLICT (not retryable,
// gRPC ALREADY_EXISTS, REST 409 when every event of a request is refused
// so), as an idempotency key reused with other parameters is. "The same
// payload" is the same contract message, whatever its form: a payload's
// fingerprint is the SHA-256 of its canonical binary
// (contract.Canonical: JSON and binary of one message, fields or map
// entries in any order, have one), the sinks' payload_fingerprint. The
// refusal carries both fingerprints in its conflict, is counted in
// sluice_events_total{reason="IDEMPOTENCY_CONFLICT"} by source and type,
// and is logged (at most conflictLogRate lines a second, a burst of
// conflictLogBurst; the next line says how many were not logged). Where
// each case is caught:
//
//   - repeated within one request: the gateway, after the first copy is
//     judged (with dedup off too: a repeat with the same payload is
//     published again, one with another payload refused, once the first is
//     accepted). The conflict names the first's whole fingerprint.
//   - within the dedup window, on the gateway that accepted the first: the
//     window, which keeps 64 bits of each accepted payload's fingerprint
//     (the conflict's accepted_fingerprint is their 16 hex digits, a prefix
//     of the whole). The window's cost is 8 bytes an id.
//   - past the window, once max_entries has forgotten the id, after the
//     gateway restarts, or on another gateway replica: not here. The
//     second payload is published, and the sink keeps the first, records
//     the copy in its conflicts table and counts it in
//     sluice_sink_conflicts_total.
//
// A poller's items are judged the same way: a partner item that changes
// under the same id is refused and skipped; map its id to include what
// changes (a version or an updated_at) to publish each version.
//
// # TLS and client certificates
//
// Each listener has a TLS block (grpc_tls, http_tls; package tlsfiles):
// without cert_file it serves plaintext, with it TLS 1.2 or newer, the
// REST listener both HTTP/2 and HTTP/1.1. The certificate, key and client
// CAs are reloaded when their files change, for new connections, without a
// restart; a replacement that does not load keeps the previous one
// (sluice_tls_reloads_total, on the Registerer of WithServerRegisterer).
// insecure marks plaintext on an address other than loopback as meant;
// Config.PlaintextExposed lists the listeners that would serve plaintext
// there without it.
//
// A source may list client_certs: names ("dns:", "uri:", "email:" SANs, or
// "cn:" the subject common name) that identify it by a client certificate
// verified against the listener's client_ca_file. Only a verified chain
// counts, never a certificate merely presented. An API key, when one is
// sent, decides alone: an unknown key is UNAUTHENTICATED even when the
// certificate would map to a source. Without a key, a verified certificate
// that names no source, or names two, is UNAUTHENTICATED. A source known
// by certificate has its allowed types and its rate limit as by key. REST
// requests carry their TLS state into the context as gRPC calls do (a
// peer with credentials.TLSInfo), so one authentication serves both.
//
// # Compression
//
// REST bodies may come with Content-Encoding gzip (or x-gzip), zstd or
// identity, in any letter case. Anything else, or a list of more than one
// coding, is MALFORMED (400) with Accept-Encoding: gzip, zstd, the body
// unread. A compressed body is decoded by a decompressingReader
// (compress.go) that stops producing output at MaxRequestBytes+1 bytes and
// refuses the body DECOMPRESSED_TOO_LARGE (413, not retryable), so a
// compression bomb is never inflated past the limit; a zstd frame that
// asks for a window (or, in one segment, a content size) over 8 MiB (RFC
// 9659's bound, which decoders must take) or over MaxRequestBytes+1 when
// that is larger is refused so before its window is allocated. A stream
// that does not decode (a bad header or checksum, cut short, bytes after
// its end) is MALFORMED. Such a body is charged as one of
// MaxRequestBytes, as a gRPC receive is, until it is in, and a zstd one
// its decoder's window besides.
//
// gRPC accepts messages in gzip and zstd, and answers go back in the
// request's compressor. A compressed message is decompressed by the
// server codec, not by grpc-go, with the same decoders and bounds as a
// REST body: over MaxRequestBytes as it came it is BATCH_TOO_LARGE, past
// MaxRequestBytes decoded (or with a zstd window over the bound above) it
// is DECOMPRESSED_TOO_LARGE, and one that does not decompress is
// MALFORMED, each with ErrorInfo; it is charged as REST charges a
// compressed body, a zstd one with its window. A compressed health or
// reflection request, which no budget is charged for, is decompressed to
// at most 64 KiB with a zstd window of at most that. grpc-go would decompress
// before the codec and answer a failure with a bare INTERNAL, so the
// server's decompressors only pass a message on behind a one-byte mark of
// its coding (compress.go): gzip's per server (grpc.RPCDecompressor), and
// zstd's as the "zstd" compressor registered in init, which a gRPC client
// in the same process therefore cannot read zstd answers with ("gzip"
// stays grpc-go's own, for every client).
//
// REST answers of 1 KiB or more are compressed in gzip or zstd when
// Accept-Encoding asks for it (weights, q=0, identity and "*" honoured;
// gzip on a tie), with Vary: Accept-Encoding on every answer to a request
// that sent it. Without Accept-Encoding, answers are the same bytes as
// before.
//
// # The API's description
//
// With HTTP.OpenAPI (the default), the REST listener serves GET
// /openapi.json, an OpenAPI 3.1 description built at start, and at each
// contracts reload, from the loaded contracts (openapi.go; each payload's
// schema from contract.JSONSchema), and GET /docs, a page of it (docs.go),
// both without authentication. The description is never narrower than the
// gateway: every event it accepts is valid under it. Both documents are
// compressed once, when built, and served in the coding asked for with an
// ETag per coding (If-None-Match answers 304). Other methods on them are
// 405 with Allow.
//
// # Guarantees
//
//   - Every event gets a result at its index: ACCEPTED (durability KAFKA
//     or LOCAL_DISK, and its position), DUPLICATE (with the original's
//     position), or REJECTED with a reason from the one Reason enum, its
//     retryable flag, retry_after where one applies, and field violations
//     where a rule failed. gRPC (unary and PublishStream) and REST carry
//     the same results.
//   - A gRPC request whose every event is refused for the same pressure
//     reason (BUFFER_FULL or UNAVAILABLE) is refused whole, UNAVAILABLE
//     with RetryInfo, so clients' retry policies see it.
//   - Whole-request refusals carry ErrorInfo (reason, retryable),
//     BadRequest and RetryInfo on gRPC, and the same fields as JSON with the
//     table's HTTP status and Retry-After on REST. Undecodable requests are
//     MALFORMED (INVALID_ARGUMENT, 400), never a bare INTERNAL or a 5xx;
//     unknown paths and methods are typed 404s and 405s (with Allow).
//     Answers gRPC gives itself, before or after sluice's handler, have no
//     ErrorInfo: a message longer on the wire than twice MaxRequestBytes
//     and a byte (RESOURCE_EXHAUSTED, unread), one that missed ReceiveTimeout
//     (DEADLINE_EXCEEDED), a unary call with no message or two
//     (INTERNAL), a health or reflection request that does not decode or
//     decompress (INTERNAL), headers over
//     MaxHeaderListBytes and streams past MaxConcurrentStreams (stream
//     resets). net/http answers a request it cannot parse (a bad request
//     line or version, headers over MaxHeaderBytes) in plain text.
//   - Answers are bounded: at most MaxViolationsPerEvent violations per
//     rejection and MaxViolationsPerResponse per answer, the message saying
//     how many more; a payload over contract.FullReportBytes is reported by
//     its first failed rule.
//   - REST batch status: 200 when every event succeeded, 207 when some were
//     rejected, and when none succeeded the status the reasons share (400,
//     403, 413, 422, 503) or 422 when they differ; Retry-After when every
//     event was refused retryably.
//   - Nothing waits unbounded: an event waits until PublishTimeout or
//     shortly before the caller's deadline, whichever is first, and is then
//     answered UNAVAILABLE, retryable. A full spool answers BUFFER_FULL,
//     retryable, with the spool's estimate of the wait. It may still reach Kafka later;
//     a retry may then make a duplicate record, which the sinks absorb by
//     event id. Nothing answered ACCEPTED exists only in memory.
//   - Memory is bounded: the requests held at once by RequestMemoryBytes
//     (each charged twice its size and 64 KiB, a gRPC receive as a request
//     of MaxRequestBytes; what decoding builds stays within that, but for
//     the moment a gRPC message and its copy are both there), half
//     for requests and half for stream batches, so idle streams cannot
//     starve requests; the
//     dedup window's MaxEntries, each stream's batches in flight by
//     StreamWindow and StreamWindowBytes (a full window stops reading the
//     stream, so HTTP/2 flow control, with fixed windows, slows the
//     sender), and the work of checking by CheckingEvents, where a request
//     weighs its events or its bytes in 8 KiB units, whichever is more.
//   - A PublishStream that makes no progress for StreamIdleTimeout (no
//     batch arrives, no answer can be sent) is ended UNAVAILABLE with
//     RetryInfo, and what it held is freed.
//   - Connections are bounded on gRPC: header bytes per call
//     (MaxHeaderListBytes), streams per connection (MaxConcurrentStreams)
//     and in total, every one counted in the tap before its message is
//     read: authenticated streams (PublishStream, and health or
//     reflection calls with a valid credential) by MaxStreams, calls
//     without a credential (health, reflection) by a share of their own,
//     UnauthenticatedStreams, of which long-lived streams (health Watch,
//     reflection) hold at most half, so a health Check is answered while
//     they are at their bound; both UNAVAILABLE with RetryInfo past
//     them. Unary calls whose message is still arriving are bounded by
//     ReceivingRequests (UNAVAILABLE past it), how long that message may
//     take by ReceiveTimeout (DEADLINE_EXCEEDED), and a connection's age
//     by MaxConnectionAge (then GOAWAY).
//   - Readiness (Server.Ready, gRPC health) is checked in the server's own
//     goroutine, not on demand; metrics and probes are served by
//     internal/admin on a listener apart from the API.
//
// # What it does not do
//
//   - The dedup window is per gateway process and in memory: replicas, and
//     a restarted gateway, may publish an id again. The sinks' upsert by
//     event id is what makes an effect happen once.
//   - Without a spool configured, events are refused UNAVAILABLE while
//     Kafka is down instead of being spooled.
package gateway
