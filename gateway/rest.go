package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/contract"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// REST: POST /v1/events goes through grpc-gateway's mux and the generated
// handler, with four pieces of sluice's own:
//   - authenticateREST finds the caller's source from the headers before
//     anything reads the body, and refuses an unknown caller with 401
//     without reading it;
//   - limitBody refuses a body over MaxRequestBytes from its Content-Length
//     without reading it, and stops reading one that turns out longer;
//   - restMarshaler decodes the request so that each event's "payload" is
//     the contract message as a JSON object, kept as text for the contract
//     to decode (a generic JSON value would lose int64 precision);
//   - errorHandler and forwardResponse give DESIGN.md's status codes, the
//     typed JSON body of a whole-request failure, and Retry-After.

// requestBody wraps a REST body: it counts what is read against the limit
// and carries a decode failure from the decoder to the error handler, which
// grpc-gateway otherwise flattens to a plain INVALID_ARGUMENT.
type requestBody struct {
	io.ReadCloser
	limit   int64
	read    int64
	failure *Failure
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
		md := metadata.MD{}
		for name, values := range r.Header {
			if key, ok := headerMatcher(name); ok && key != traceparentMetadata {
				md.Append(key, values...)
			}
		}
		ctx := r.Context()
		if old, ok := metadata.FromIncomingContext(ctx); ok {
			md = metadata.Join(old, md)
		}
		src, f := s.sources.authenticate(metadata.NewIncomingContext(ctx, md))
		if f != nil {
			s.metrics.requests.WithLabelValues("rest", f.Reason.String()).Inc()
			// HTTP/1.1 cannot skip an unread body but by closing; HTTP/2
			// resets the one stream, and a Connection header there would
			// end the whole connection, every other caller's streams too.
			if r.ContentLength != 0 && r.ProtoMajor == 1 {
				w.Header().Set("Connection", "close")
			}
			writeFailure(w, f)
			return
		}
		next.ServeHTTP(w, r.WithContext(withSource(ctx, src)))
	})
}

// restMarshaler is grpc-gateway's JSON marshaler with sluice's decoding of
// PublishRequest. Responses use proto field names and print default values,
// so "index": 0 and "retryable": false are always there.
type restMarshaler struct {
	runtime.JSONPb
	maxDepth int
}

func newRESTMarshaler(maxDepth int) *restMarshaler {
	return &restMarshaler{
		JSONPb: runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true},
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
		},
		maxDepth: maxDepth,
	}
}

// Marshal prints compact JSON: protojson varies its spacing on purpose, and
// an answer should read the same every time.
func (m *restMarshaler) Marshal(v any) ([]byte, error) {
	b, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b))
	if err := json.Compact(&out, b); err != nil {
		return b, nil
	}
	return out.Bytes(), nil
}

func (m *restMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		req, ok := v.(*ingestv1.PublishRequest)
		if !ok {
			return m.JSONPb.NewDecoder(r).Decode(v)
		}
		body, err := io.ReadAll(r)
		var f *Failure
		switch {
		case errors.Is(err, errBodyTooLarge):
			f = &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE, Message: "request body is over the limit"}
		case err != nil:
			f = &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "reading the body: " + err.Error()}
		default:
			f = decodePublishRequest(body, m.maxDepth, req)
		}
		if f == nil {
			return nil
		}
		if rb, ok := r.(*requestBody); ok {
			rb.failure = f
		}
		return f
	})
}

// restEvent is an Event as REST sends it.
type restEvent struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	OccurredAt   string            `json:"occurred_at"`
	PartitionKey string            `json:"partition_key"`
	Payload      json.RawMessage   `json:"payload"`
	Attributes   map[string]string `json:"attributes"`
}

// decodePublishRequest reads {"events": [...]} into req. The envelope is
// strict (unknown members are refused, so a misspelt field is not silently
// dropped); each payload must be a JSON object and is kept as text for its
// contract to decode, which judges it per event.
func decodePublishRequest(body []byte, maxDepth int, req *ingestv1.PublishRequest) *Failure {
	malformed := func(field, msg string) *Failure {
		f := &Failure{Reason: ingestv1.Reason_MALFORMED, Message: msg}
		if field != "" {
			f.Violations = []*ingestv1.FieldViolation{{Field: field, Rule: "sluice.decode", Message: msg}}
		}
		return f
	}
	if !utf8.Valid(body) {
		return malformed("", "body is not valid UTF-8")
	}
	// The envelope adds three levels above the payload: the request
	// object, the events array and the event object.
	if err := contract.CheckJSONDepth(body, maxDepth+3); err != nil {
		return malformed("", err.Error())
	}
	var envelope struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := strictUnmarshal(body, &envelope); err != nil {
		return malformed("", "body is not a publish request: "+err.Error())
	}
	req.Events = make([]*ingestv1.Event, len(envelope.Events))
	for i, raw := range envelope.Events {
		at := fmt.Sprintf("events[%d]", i)
		var re restEvent
		if err := strictUnmarshal(raw, &re); err != nil {
			return malformed(at, at+": "+err.Error())
		}
		ev := &ingestv1.Event{Id: re.ID, Type: re.Type, PartitionKey: re.PartitionKey, Attributes: re.Attributes}
		if re.OccurredAt != "" {
			t, err := time.Parse(time.RFC3339Nano, re.OccurredAt)
			if err != nil {
				return malformed(at+".occurred_at", at+".occurred_at: not an RFC 3339 time: "+strconv.Quote(re.OccurredAt))
			}
			ev.OccurredAt = timestamppb.New(t)
		}
		if p := bytes.TrimSpace(re.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			if p[0] != '{' {
				return malformed(at+".payload", at+".payload: must be a JSON object (the contract message)")
			}
			ev.Payload = &ingestv1.Event_Json{Json: string(p)}
		}
		req.Events[i] = ev
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// errorHandler renders a whole-request failure as DESIGN.md's table says:
// the reason's HTTP status, the ErrorBody JSON and Retry-After.
func errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	var f *Failure
	switch {
	case rbFailure(r) != nil:
		f = rbFailure(r)
	case errors.As(err, &f):
	default:
		f = failureOf(err)
	}
	writeFailure(w, f)
}

// routingErrorHandler keeps the 404 or 405 of an unknown path or method,
// with the typed body.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, httpStatus int) {
	f := &Failure{Reason: ingestv1.Reason_MALFORMED, Message: "no such endpoint: the publish API is POST /v1/events"}
	writeFailureStatus(w, f, httpStatus)
}

func rbFailure(r *http.Request) *Failure {
	if rb, ok := r.Body.(*requestBody); ok {
		return rb.failure
	}
	return nil
}

// failureOf types an error that did not come from sluice's own checks:
// grpc-gateway's routing errors and the like. A request never gets a 5xx
// for its input, so anything unknown is UNAVAILABLE and retryable.
func failureOf(err error) *Failure {
	return &Failure{Reason: ingestv1.Reason_UNAVAILABLE, RetryAfter: time.Second, Message: err.Error()}
}

var failureJSON = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

func writeFailure(w http.ResponseWriter, f *Failure) {
	writeFailureStatus(w, f, traits(f.Reason).http)
}

func writeFailureStatus(w http.ResponseWriter, f *Failure, code int) {
	body, err := failureJSON.Marshal(f.Body())
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
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// forwardResponse sets the batch status (200, 207, or the shared refusal)
// and Retry-After when every event was refused retryably.
func forwardResponse(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	resp, ok := m.(*ingestv1.PublishResponse)
	if !ok {
		return nil
	}
	code, wait := batchHTTPStatus(resp.GetResults())
	if wait > 0 {
		w.Header().Set("Retry-After", retryAfterHeader(wait))
	}
	if code != http.StatusOK {
		w.WriteHeader(code)
	}
	return nil
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
	}
	return "", false
}
