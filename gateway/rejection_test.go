package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// rawCodec sends bytes as they are, to put undecodable messages on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

// refusal is what a caller learns from a refusal, whichever transport.
type refusal struct {
	reason     ingestv1.Reason
	retryable  bool
	retryAfter time.Duration
	field      string
	rule       string
}

// expect is one row's expectation. grpcCode OK means the refusal is per
// event: gRPC answers OK and the reason is in the event's result.
type expect struct {
	refusal
	httpStatus int
	grpcCode   codes.Code
}

func TestEveryRejectionReason(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	now := h.clock.Now()
	logLine := ev{ID: "log-1", Type: typeLog, Key: "checkout-api", At: now, JSON: examples.LogLineJSON}
	order := ev{ID: "order-1", Type: typeOrder, Key: "cust-1042", At: now, JSON: examples.OrderPlacedJSON}

	type row struct {
		name   string
		expect expect
		rest   func(t *testing.T) (*http.Response, []byte)
		grpc   func(t *testing.T) (*ingestv1.PublishResponse, error)
	}
	one := func(key string, e ev) (func(*testing.T) (*http.Response, []byte), func(*testing.T) (*ingestv1.PublishResponse, error)) {
		return func(*testing.T) (*http.Response, []byte) { return h.postREST(key, restBody(e)) },
			func(*testing.T) (*ingestv1.PublishResponse, error) { return h.publishGRPC(key, e) }
	}
	rows := []row{}
	add := func(name string, x expect, key string, e ev) {
		r, g := one(key, e)
		rows = append(rows, row{name, x, r, g})
	}

	// Whole-request MALFORMED: the request itself does not decode.
	rows = append(rows, row{
		name:   "MALFORMED request",
		expect: expect{refusal{reason: ingestv1.Reason_MALFORMED}, 400, codes.InvalidArgument},
		rest:   func(*testing.T) (*http.Response, []byte) { return h.postREST(keyAll, []byte(`{"events":[{"id":`)) },
		grpc: func(t *testing.T) (*ingestv1.PublishResponse, error) {
			ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 10*time.Second)
			defer cancel()
			var out []byte
			// Field 1 (events), wire type 2, length 5, but only 2 bytes follow.
			err := h.conn.Invoke(ctx, "/sluice.ingest.v1.IngestService/Publish", []byte{0x0a, 0x05, 0x01, 0x02}, &out, grpc.ForceCodec(rawCodec{}))
			return nil, err
		},
	})
	badType := logLine
	badType.JSON = []byte(`{"service": 5}`)
	add("MALFORMED payload", expect{refusal{reason: ingestv1.Reason_MALFORMED, field: "payload", rule: "sluice.decode"}, 400, codes.OK}, keyAll, badType)

	badEmail := order
	badEmail.JSON = setJSON(t, examples.OrderPlacedJSON, "customer.email", "not-an-email")
	add("SCHEMA_VIOLATION payload", expect{refusal{reason: ingestv1.Reason_SCHEMA_VIOLATION, field: "payload.customer.email", rule: "string.email"}, 422, codes.OK}, keyAll, badEmail)

	freeByCard := order
	freeByCard.JSON = setJSON(t, examples.OrderPlacedJSON, "total_cents", 0)
	add("SCHEMA_VIOLATION message rule", expect{refusal{reason: ingestv1.Reason_SCHEMA_VIOLATION, field: "payload", rule: "order_placed.free_order_needs_invoice"}, 422, codes.OK}, keyAll, freeByCard)

	noID := logLine
	noID.ID = ""
	add("SCHEMA_VIOLATION envelope", expect{refusal{reason: ingestv1.Reason_SCHEMA_VIOLATION, field: "id", rule: "string.min_len"}, 422, codes.OK}, keyAll, noID)

	unknown := logLine
	unknown.Type = "examples.nope.v1.Nope"
	add("UNKNOWN_EVENT_TYPE", expect{refusal{reason: ingestv1.Reason_UNKNOWN_EVENT_TYPE}, 422, codes.OK}, keyAll, unknown)

	big := logLine
	big.JSON = setJSON(t, examples.LogLineJSON, "message", strings.Repeat("x", 5000))
	add("EVENT_TOO_LARGE", expect{refusal{reason: ingestv1.Reason_EVENT_TOO_LARGE}, 413, codes.OK}, keyAll, big)

	var eleven []ev
	for i := range 11 {
		e := logLine
		e.ID = fmt.Sprintf("many-%d", i)
		eleven = append(eleven, e)
	}
	rows = append(rows, row{
		name:   "BATCH_TOO_LARGE events",
		expect: expect{refusal{reason: ingestv1.Reason_BATCH_TOO_LARGE}, 413, codes.InvalidArgument},
		rest:   func(*testing.T) (*http.Response, []byte) { return h.postREST(keyAll, restBody(eleven...)) },
		grpc:   func(*testing.T) (*ingestv1.PublishResponse, error) { return h.publishGRPC(keyAll, eleven...) },
	})
	huge := logLine
	huge.Binary = make([]byte, 70<<10) // over MaxRequestBytes, under twice it
	huge.JSON = []byte(`{"message":"` + strings.Repeat("y", 70<<10) + `"}`)
	add("BATCH_TOO_LARGE bytes", expect{refusal{reason: ingestv1.Reason_BATCH_TOO_LARGE}, 413, codes.InvalidArgument}, keyAll, huge)

	old := logLine
	old.At = now.Add(-8 * 24 * time.Hour)
	add("EVENT_TIME_OUT_OF_RANGE past", expect{refusal{reason: ingestv1.Reason_EVENT_TIME_OUT_OF_RANGE, field: "occurred_at", rule: "sluice.skew_window"}, 422, codes.OK}, keyAll, old)
	future := logLine
	future.At = now.Add(time.Hour)
	add("EVENT_TIME_OUT_OF_RANGE future", expect{refusal{reason: ingestv1.Reason_EVENT_TIME_OUT_OF_RANGE, field: "occurred_at", rule: "sluice.skew_window"}, 422, codes.OK}, keyAll, future)

	add("UNAUTHENTICATED no key", expect{refusal{reason: ingestv1.Reason_UNAUTHENTICATED}, 401, codes.Unauthenticated}, "", logLine)
	add("UNAUTHENTICATED wrong key", expect{refusal{reason: ingestv1.Reason_UNAUTHENTICATED}, 401, codes.Unauthenticated}, "not-a-key", logLine)
	add("FORBIDDEN_EVENT_TYPE", expect{refusal{reason: ingestv1.Reason_FORBIDDEN_EVENT_TYPE}, 403, codes.OK}, keyRestricted, order)

	// The slow source has a bucket of 10 at 1 event/s. The clock moves on
	// 20 s first, so the bucket is full; ten events drain it and the next
	// one waits exactly a second.
	var ten []ev
	for i := range 10 {
		e := logLine
		e.ID = fmt.Sprintf("burst-%d", i)
		ten = append(ten, e)
	}
	rateLimited := expect{refusal{reason: ingestv1.Reason_RATE_LIMITED, retryable: true, retryAfter: time.Second}, 429, codes.ResourceExhausted}
	rows = append(rows, row{
		name:   "RATE_LIMITED",
		expect: rateLimited,
		rest: func(t *testing.T) (*http.Response, []byte) {
			h.clock.Advance(20 * time.Second)
			if resp, body := h.postREST(keySlow, restBody(ten...)); resp.StatusCode != 200 {
				t.Fatalf("a full bucket refused a burst: %d %s", resp.StatusCode, body)
			}
			return h.postREST(keySlow, restBody(logLine))
		},
		grpc: func(t *testing.T) (*ingestv1.PublishResponse, error) {
			h.clock.Advance(20 * time.Second)
			if _, err := h.publishGRPC(keySlow, ten...); err != nil {
				t.Fatalf("a full bucket refused a burst: %v", err)
			}
			return h.publishGRPC(keySlow, logLine)
		},
	})

	for _, r := range rows {
		t.Run(r.name+"/rest", func(t *testing.T) {
			resp, body := r.rest(t)
			checkREST(t, r.expect, resp, body)
		})
		t.Run(r.name+"/grpc", func(t *testing.T) {
			out, err := r.grpc(t)
			checkGRPC(t, r.expect, out, err)
		})
	}
}

// TestUnavailableWhenKafkaIsUnreachable points the gateway at a port where
// no broker listens: events are refused retryably, with Retry-After, before
// the caller's deadline.
func TestUnavailableWhenKafkaIsUnreachable(t *testing.T) {
	h := newHarness(t, harnessOpts{
		brokers: []string{"127.0.0.1:1"},
		config:  func(c *gateway.Config) { c.PublishTimeout = 4 * time.Second },
	})
	e := ev{ID: "log-u", Type: typeLog, Key: "k", At: h.clock.Now(), JSON: examples.LogLineJSON}
	want := expect{refusal{reason: ingestv1.Reason_UNAVAILABLE, retryable: true, retryAfter: time.Second}, 503, codes.OK}

	resp, body := h.postREST(keyAll, restBody(e))
	checkREST(t, want, resp, body)

	// Over gRPC, a request refused whole for pressure is UNAVAILABLE with
	// ErrorInfo and RetryInfo, so retry policies see it.
	want.grpcCode = codes.Unavailable

	// A caller deadline shorter than PublishTimeout is answered before it
	// passes, not with DEADLINE_EXCEEDED.
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 3*time.Second)
	defer cancel()
	out, err := h.client.Publish(ctx, &ingestv1.PublishRequest{Events: []*ingestv1.Event{e.proto()}})
	checkGRPC(t, want, out, err)
}

func checkREST(t *testing.T, x expect, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != x.httpStatus {
		t.Fatalf("HTTP status %d, want %d; body %s", resp.StatusCode, x.httpStatus, body)
	}
	var got refusal
	if x.grpcCode != codes.OK {
		var eb ingestv1.ErrorBody
		if err := protojson.Unmarshal(body, &eb); err != nil {
			t.Fatalf("error body %s: %v", body, err)
		}
		got = refusal{reason: eb.GetReason(), retryable: eb.GetRetryable(), retryAfter: eb.GetRetryAfter().AsDuration()}
		if v := eb.GetViolations(); len(v) > 0 {
			got.field, got.rule = v[0].GetField(), v[0].GetRule()
		}
	} else {
		var pr ingestv1.PublishResponse
		if err := protojson.Unmarshal(body, &pr); err != nil {
			t.Fatalf("response %s: %v", body, err)
		}
		got = resultRefusal(t, pr.GetResults())
	}
	compareRefusal(t, x, got)
	wantHeader := ""
	if x.retryAfter > 0 {
		wantHeader = fmt.Sprint(int((x.retryAfter + time.Second - 1) / time.Second))
	}
	if h := resp.Header.Get("Retry-After"); h != wantHeader {
		t.Errorf("Retry-After header %q, want %q", h, wantHeader)
	}
}

func checkGRPC(t *testing.T, x expect, out *ingestv1.PublishResponse, err error) {
	t.Helper()
	if status.Code(err) != x.grpcCode {
		t.Fatalf("gRPC code %v (%v), want %v", status.Code(err), err, x.grpcCode)
	}
	if x.grpcCode == codes.OK {
		compareRefusal(t, x, resultRefusal(t, out.GetResults()))
		return
	}
	var got refusal
	for _, d := range status.Convert(err).Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			got.reason = ingestv1.Reason(ingestv1.Reason_value[d.GetReason()])
			got.retryable = d.GetMetadata()["retryable"] == "true"
			if d.GetDomain() != gateway.ErrorDomain {
				t.Errorf("ErrorInfo domain %q", d.GetDomain())
			}
		case *errdetails.RetryInfo:
			got.retryAfter = d.GetRetryDelay().AsDuration()
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 {
				got.field, got.rule = v[0].GetField(), v[0].GetReason()
			}
		}
	}
	compareRefusal(t, x, got)
}

func resultRefusal(t *testing.T, results []*ingestv1.EventResult) refusal {
	t.Helper()
	if len(results) != 1 || results[0].GetOutcome() != ingestv1.Outcome_REJECTED {
		t.Fatalf("want one REJECTED result, got %v", results)
	}
	rej := results[0].GetRejection()
	got := refusal{reason: rej.GetReason(), retryable: rej.GetRetryable(), retryAfter: rej.GetRetryAfter().AsDuration()}
	if v := rej.GetViolations(); len(v) > 0 {
		got.field, got.rule = v[0].GetField(), v[0].GetRule()
	}
	return got
}

func compareRefusal(t *testing.T, x expect, got refusal) {
	t.Helper()
	want := x.refusal
	want.retryable = want.retryable || want.reason == ingestv1.Reason_RATE_LIMITED || want.reason == ingestv1.Reason_UNAVAILABLE || want.reason == ingestv1.Reason_BUFFER_FULL
	if got.reason != want.reason || got.retryable != want.retryable || got.retryAfter != want.retryAfter {
		t.Errorf("got reason %v retryable %v retry_after %v; want %v %v %v",
			got.reason, got.retryable, got.retryAfter, want.reason, want.retryable, want.retryAfter)
	}
	if want.field != "" && (got.field != want.field || got.rule != want.rule) {
		t.Errorf("got violation %s (%s), want %s (%s)", got.field, got.rule, want.field, want.rule)
	}
}
