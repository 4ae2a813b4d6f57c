package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
)

// REST: POST /v1/events is a route on grpc-gateway's mux (HandlePath),
// served by servePublish, with these pieces around it:
//   - restRoutes sends /v1/... to the mux and answers anything else with
//     the typed 404, without net/http's redirects or text bodies;
//   - authenticateREST finds the caller's source from the headers before
//     anything reads the body, and refuses an unknown caller with 401
//     without reading it;
//   - limitBody refuses a body over MaxRequestBytes from its Content-Length
//     without reading it, and stops reading one that turns out longer;
//   - encodeAnswers notes the coding Accept-Encoding asks for, and
//     writeBody compresses an answer of 1 KiB or more in it (compress.go);
//   - servePublish refuses a Content-Encoding other than gzip, zstd or
//     identity unread (MALFORMED, with Accept-Encoding), charges the memory
//     budget, reads the body (a compressed one through a
//     decompressingReader, to at most MaxRequestBytes decoded bytes:
//     DECOMPRESSED_TOO_LARGE past it, MALFORMED when it does not decode),
//     decodes it
//     with decodeJSONBatch (strict: duplicate keys, names in another letter
//     case and lone surrogates are MALFORMED; each payload is kept as text
//     for its contract to decode, since a generic JSON value would lose
//     int64 precision) and answers with the status codes of docs/api.md's
//     results and reasons, the typed JSON body of a whole-request failure,
//     and Retry-After;
//   - the mux's routing errors are typed 404s and 405s (with Allow).
//
// X-HTTP-Method-Override and the form-body fallback of grpc-gateway are
// off: a JSON body sent with curl's default form content type is judged as
// JSON. Grpc-Timeout, when sent, is the request's deadline; one that does
// not parse is MALFORMED.

// requestBody wraps a REST body and counts what is read against the limit.
type requestBody struct {
	io.ReadCloser
	limit int64
	read  int64
}

var errBodyTooLarge = errors.New("gateway: request body over the limit")

func (b *requestBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, errBodyTooLarge
	}
	if rest := b.limit + 1 - b.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, errBodyTooLarge
	}
	return n, err
}

// limitBody applies MaxRequestBytes to every request the REST mux serves.
func limitBody(limit int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > int64(limit) {
			writeFailure(w, &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
				Message: fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, limit)})
			// The body is not read; close the connection rather than drain it.
			w.Header().Set("Connection", "close")
			return
		}
		r.Body = &requestBody{ReadCloser: r.Body, limit: int64(limit)}
		next.ServeHTTP(w, r)
	})
}

// authenticateREST authenticates a REST request from its headers (the
// same ones headerMatcher passes on: X-Api-Key, Authorization: Bearer)
// and from what r.Context() carries, before the body is read. A caller
// that is not a source gets 401 with the typed body; its body is left
// unread and the connection closed rather than drained. The source goes to
// the Service in the request's context.
func (s *Service) authenticateREST(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		var src *source
		var f *Failure
		if old, ok := metadata.FromIncomingContext(ctx); ok {
			// Metadata that came with the context goes first, as it
			// would in a joined MD.
			src, f = s.sources.authenticateKeys(ctx, firstOf(old, r.Header, apiKeyMetadata, "X-Api-Key"), firstOf(old, r.Header, authorizationMetadata, "Authorization"))
		} else {
			src, f = s.sources.authenticateKeys(ctx, first(r.Header, "X-Api-Key"), first(r.Header, "Authorization"))
		}
		if f != nil {
			s.metrics.requests.WithLabelValues("rest", f.Reason.String()).Inc()
			skipBody(w, r)
			writeFailure(w, f)
			return
		}
		next.ServeHTTP(w, r.WithContext(withSource(ctx, src)))
	})
}

// firstOf is the first value of key in md, else of header (in its
// canonical form) in h.
func firstOf(md metadata.MD, h http.Header, key, header string) string {
	if v := first(md, key); v != "" {
		return v
	}
	return first(h, header)
}

// skipBody answers a request whose body is left unread. HTTP/1.1 cannot
// skip it but by closing the connection; HTTP/2 resets the one stream, and
// a Connection header there would end the whole connection, every other
// caller's streams too.
func skipBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 && r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}

// restRoutes serves /v1/... with api and answers any other path with the
// typed 404. The path is taken as sent (escaped), so /v1%2Fevents is not
// /v1/events.
func restRoutes(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.EscapedPath(), "/v1/") {
			api.ServeHTTP(w, r)
			return
		}
		skipBody(w, r)
		writeFailureStatus(w, noSuchEndpoint(), http.StatusNotFound)
	})
}

func noSuchEndpoint() *Failure {
	return &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "no such endpoint: the publish API is POST /v1/events"}
}

// servePublish is POST /v1/events.
func (s *Service) servePublish() runtime.HandlerFunc {
	limits := envelopeLimitsOf(s.cfg.Limits)
	return s.serveBatch("rest", spanREST, true, func(_ *source, _ http.Header, body []byte) (*batch, *Failure) {
		return decodeJSONBatch(body, limits)
	})
}

// serveBatch is an endpoint whose callers authenticate as gRPC's do, by
// API key or client certificate (POST /v1/events, /v1/cloudevents): the
// source is known before a byte of the body is read, the body is read
// under the memory budget (readRequest), decode makes it the batch, and
// the batch is published and answered. transport labels the metrics.
// copies says the decoded events hold copies of what they need, so the
// body's memory is handed back before publishing.
func (s *Service) serveBatch(transport, spanName string, copies bool,
	decode func(src *source, h http.Header, body []byte) (*batch, *Failure)) runtime.HandlerFunc {
	decoders := newBodyDecoders(s.cfg.Limits.MaxRequestBytes)
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		start := s.now()
		var span requestSpan
		ctx := r.Context()
		defer func() {
			tracing.Observe(ctx, s.metrics.requestDuration.WithLabelValues(transport), s.now().Sub(start).Seconds())
			span.end()
		}()
		fail := func(f *Failure) {
			s.metrics.requests.WithLabelValues(transport, f.Reason.String()).Inc()
			span.fail(f)
			writeFailure(w, f)
		}
		ctx, cancel, f := restContext(r)
		if f != nil {
			ctx = r.Context()
			skipBody(w, r)
			fail(f)
			return
		}
		defer cancel()
		ctx, span = s.startRequest(ctx, spanName, transport, nil)
		src, f := s.source(ctx)
		if f != nil {
			skipBody(w, r)
			fail(f)
			return
		}
		span.source(src)
		leave, f := s.enterRequest(src)
		if f != nil {
			skipBody(w, r)
			fail(f)
			return
		}
		defer leave()
		body, hold, paid, f := s.readRequest(ctx, w, r, src, decoders)
		if f != nil {
			fail(f)
			return
		}
		defer hold.release()
		b, f := decode(src, r.Header, body)
		if f != nil {
			fail(f) // a body that does not decode keeps its bytes' charge
			return
		}
		span.decoded(b)
		b.paid = paid
		if copies {
			hold.shrink(requestCost(len(body)))
			body = nil // the events hold copies; the text may go
		}
		resp, f := s.publishBatch(ctx, transport, src, b)
		if f != nil {
			span.fail(f)
			writeFailure(w, f) // counted by publishBatch
			return
		}
		s.writeAnswer(w, resp)
	}
}

// restContext is what the service needs of a REST request beyond its
// source (authenticateREST put that in r.Context()): Grpc-Timeout, when
// sent, as the deadline (MALFORMED when it does not parse), and the
// traceparent and tracestate headers as incoming metadata, which the
// request's span is parented on and the records carry. It is
// all that grpc-gateway's AnnotateIncomingContext gave the service, without
// the metadata of every header, the method name and the path pattern it
// built besides, which nothing reads.
func restContext(r *http.Request) (context.Context, context.CancelFunc, *Failure) {
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if tm := r.Header.Get(grpcTimeoutHeader); tm != "" {
		d, ok := parseGRPCTimeout(tm)
		if !ok {
			return nil, nil, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "invalid grpc-timeout: " + tm}
		}
		ctx, cancel = context.WithTimeout(ctx, d)
	}
	if len(r.Header["Traceparent"]) > 0 || len(r.Header["Tracestate"]) > 0 {
		md := metadata.MD{}
		restTraceMetadata(md, r.Header)
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	return ctx, cancel, nil
}

const grpcTimeoutHeader = "Grpc-Timeout"

// parseGRPCTimeout reads a Grpc-Timeout value as gRPC over HTTP/2 writes
// it: a positive decimal and a unit (H, M, S, m, u, n). A value too large
// for a time.Duration is the longest one.
func parseGRPCTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
	if err != nil {
		return 0, false
	}
	if n > uint64(math.MaxInt64)/uint64(unit) {
		return time.Duration(math.MaxInt64), true
	}
	return unit * time.Duration(n), true
}

// readRequest reads an authenticated request's body (/v1/events,
// /v1/cloudevents): a Content-Encoding other than gzip, zstd or identity
// is refused unread (MALFORMED, with Accept-Encoding); an uncompressed
// body with a Content-Length takes its bytes from src's bytes_rate bucket
// (paid), or is refused RATE_LIMITED unread; the memory budget is charged
// before a byte is read, and the body is read decoded, to at most
// MaxRequestBytes decoded bytes. The caller releases the hold. paid is
// given back when the body is not read (no memory for it); a body read
// keeps its charge, decoded or not, and admitBatch gives it back with the
// events when the source is over its events/s.
func (s *Service) readRequest(ctx context.Context, w http.ResponseWriter, r *http.Request, src *source, decoders *bodyDecoders) (body []byte, hold *memoryHold, paid *rate.Reservation, f *Failure) {
	coding, f := requestCoding(r.Header)
	if f != nil {
		skipBody(w, r)
		w.Header().Set("Accept-Encoding", acceptedEncodings)
		return nil, nil, nil, f
	}
	// A compressed body's decoded size is not known before it is read:
	// it is charged as a body of MaxRequestBytes, as a gRPC receive is,
	// and the rest handed back once it is in. The decoder's window is
	// charged besides (newBodyDecoders).
	size := s.cfg.Limits.MaxRequestBytes
	known := coding == codingIdentity && r.ContentLength >= 0
	if known && r.ContentLength < int64(size) {
		size = int(r.ContentLength)
	}
	if known {
		if paid, f = src.prepay(s.now(), r.ContentLength); f != nil {
			skipBody(w, r)
			return nil, nil, nil, f
		}
	}
	cost := requestCost(size)
	if coding == codingZstd {
		cost += decoders.zstdWindow() // the decoder's window, besides the decoded bytes
	}
	hold, f = s.holdMemory(ctx, src, cost)
	if f != nil {
		cancelAt(paid, s.now())
		skipBody(w, r)
		return nil, nil, nil, f
	}
	body, f = readBody(decoders.reader(coding, r.Body), size, known, decoders.failure)
	if f != nil {
		hold.release()
		return nil, nil, nil, f
	}
	return body, hold, paid, nil
}

// readBody reads body, a request's body as decoded, of about size bytes:
// its Content-Length when known, else the limit (a body without one, or a
// compressed one), within the limit limitBody set and the decoder's.
// decodeFailure types the decoder's errors.
func readBody(body io.ReadCloser, size int, known bool, decodeFailure func(error) *Failure) ([]byte, *Failure) {
	defer body.Close()
	// One allocation when the size is known: room for the body and the
	// byte past it that tells the body ended; else from 64 KiB, grown as
	// append grows.
	buf := make([]byte, 0, min(size, 64<<10)+1)
	if known {
		buf = make([]byte, 0, size+1)
	}
	var err error
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		n, err = body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			err = nil
			break
		}
		if err != nil {
			break
		}
	}
	if f := decodeFailure(err); f != nil {
		return nil, f
	}
	var ne net.Error
	switch {
	case errors.Is(err, errBodyTooLarge):
		return nil, &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE, Message: "request body is over the limit"}
	case errors.As(err, &ne) && ne.Timeout():
		return nil, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "the body did not arrive in full within the server's read timeout (http.read_timeout)"}
	case err != nil:
		return nil, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "reading the body: " + err.Error()}
	}
	return buf, nil
}

// answerJSON prints answers with proto field names and default values, so
// "index": 0 and "retryable": false are always there.
var answerJSON = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

// reflectAnswer is an answer as protojson prints it, compacted: protojson
// varies its spacing on purpose, and an answer should read the same every
// time. appendAnswer writes the same bytes faster and comes here only for
// what protojson refuses.
func reflectAnswer(resp *ingestv1.PublishResponse) ([]byte, error) {
	body, err := answerJSON.Marshal(resp)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(body))
	if err := json.Compact(&out, body); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// answerBytes is about what appendAnswer writes of results, so that it
// writes into one buffer: 96 bytes a result, and its position as the
// first result's takes (a batch's accepted events mostly share a topic).
func answerBytes(results []*ingestv1.EventResult) int {
	per := 96
	if len(results) > 0 {
		if k := results[0].GetKafka(); k != nil {
			per += 56 + len(k.GetTopic())
		} else if results[0].GetSpool() != nil {
			per += 64
		}
	}
	return per*len(results) + 16
}

// writeAnswer writes a batch's results with the batch status (200, 207,
// or the shared refusal) and Retry-After when every event was refused
// retryably, as compact JSON (reflectAnswer). An answer that cannot be
// written as JSON is UNAVAILABLE with unavailable_retry_after, as every
// other UNAVAILABLE is.
func (s *Service) writeAnswer(w http.ResponseWriter, resp *ingestv1.PublishResponse) {
	code, wait := batchHTTPStatus(resp.GetResults())
	if wait > 0 {
		w.Header().Set("Retry-After", retryAfterHeader(wait))
	}
	s.writeAnswerStatus(w, resp, code)
}

// writeAnswerStatus writes resp's JSON with status code; a Retry-After,
// when one is due, is the caller's to set.
func (s *Service) writeAnswerStatus(w http.ResponseWriter, resp *ingestv1.PublishResponse, code int) {
	body, ok := appendAnswer(make([]byte, 0, answerBytes(resp.GetResults())), resp)
	if !ok {
		var err error
		if body, err = reflectAnswer(resp); err != nil {
			w.Header().Del("Retry-After")
			writeFailure(w, &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: s.cfg.UnavailableRetryAfter, Message: "encoding the answer: " + err.Error()})
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, code, body)
}

// errorHandler answers the mux's own errors: a path with a malformed
// escape, the one error it raises outside routing once method override is
// off. It is the request's fault.
func errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	skipBody(w, r)
	writeFailure(w, &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "request not understood: " + err.Error()})
}

// routingErrorHandler keeps the 404 or 405 of an unknown path or method
// (or 400 for a path that is not absolute), with the typed body; a 405
// names the one method there is.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	skipBody(w, r)
	f := noSuchEndpoint()
	if httpStatus == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
		f.Message = r.Method + " is not allowed: the publish API is POST /v1/events"
	}
	writeFailureStatus(w, f, httpStatus)
}

func writeFailure(w http.ResponseWriter, f *Failure) {
	writeFailureStatus(w, f, traits(f.Reason).http)
}

func writeFailureStatus(w http.ResponseWriter, f *Failure, code int) {
	body, err := answerJSON.Marshal(f.Body())
	var compact bytes.Buffer
	if err == nil && json.Compact(&compact, body) == nil {
		body = compact.Bytes()
	} else if err != nil {
		body = []byte(`{"reason":"` + f.Reason.String() + `"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if b := f.Body(); b.GetRetryAfter() != nil {
		h.Set("Retry-After", retryAfterHeader(f.RetryAfter))
	}
	writeBody(w, code, body)
}

// headerMatcher passes the API key and trace context to the service as
// gRPC metadata; other headers stay behind.
func headerMatcher(key string) (string, bool) {
	switch strings.ToLower(key) {
	case apiKeyMetadata:
		return apiKeyMetadata, true
	case authorizationMetadata:
		return authorizationMetadata, true
	case traceparentMetadata:
		return traceparentMetadata, true
	case tracestateMetadata:
		return tracestateMetadata, true
	}
	return "", false
}
