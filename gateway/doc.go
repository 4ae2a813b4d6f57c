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
//     authenticated one needs. Keys are stored as SHA-256 digests only.
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
//  6. The dedup window: an (source, event id) accepted within the window is
//     answered DUPLICATE and not published again, with the position the
//     accepted one was answered with. While one attempt of an id is being
//     published, others wait for its outcome, so concurrent retries make
//     one record and no caller is told DUPLICATE for an event that then
//     fails.
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
// gRPC accepts the "gzip" compressor (grpc-go's) and "zstd" (compress.go,
// registered in init); answers go back in the request's compressor. grpc-go
// decompresses a message itself and stops one byte past twice
// MaxRequestBytes of its output: a message of a compressed call between
// one and two times MaxRequestBytes once decompressed is DECOMPRESSED_TOO_LARGE with
// ErrorInfo; past that, grpc-go answers RESOURCE_EXHAUSTED itself, and a
// message that does not decompress INTERNAL, neither with ErrorInfo. The
// zstd decoder takes windows of at most 8 MiB (RFC 8878's recommended
// bound, which covers the default limits): compressors are registered per
// process, so its bound cannot follow one server's limits.
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
//     ErrorInfo: a message over twice MaxRequestBytes (RESOURCE_EXHAUSTED,
//     unread; compressed, once decompressed), one that does not
//     decompress (INTERNAL), one that missed ReceiveTimeout (DEADLINE_EXCEEDED), a unary
//     call with no message or two (INTERNAL), headers over
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
//     and in total (MaxStreams, UNAVAILABLE past it), unary calls whose
//     message is still arriving (ReceivingRequests, UNAVAILABLE past it),
//     how long that message may take (ReceiveTimeout, DEADLINE_EXCEEDED),
//     and a connection's age (MaxConnectionAge, then GOAWAY).
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
