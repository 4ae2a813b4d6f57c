package hostile

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// The messages are what the loads say they are, and answers are judged
// as the package says.

func TestMessageSizes(t *testing.T) {
	const maxRequestBytes = 4 << 20 // the gateway's default max_request_bytes
	at := time.Now()
	for _, tc := range []struct {
		name     string
		msg      []byte
		min, max int
	}{
		{"8 MB giant count", GiantCountBatch(giantEvents), 8_000_000, 8_000_000},
		{"4 MB giant count", GiantCountBatch(giantEvents / 2), 4_000_000, 4_000_000},
		{"REST giant count", GiantCountREST(restBodyBytes), restBodyBytes - 3, restBodyBytes},
		{"REST violation bomb", ViolationREST(bombKeys, at), 3_700_000, maxRequestBytes},
		{"gRPC violation bomb", ViolationGRPC(bombKeys, at), 3_500_000, maxRequestBytes},
		{"stream batch", StreamBatch(streamBatchEvents, streamMessageBytes, at), 3_500_000, 3_700_000},
	} {
		if n := len(tc.msg); n < tc.min || n > tc.max {
			t.Errorf("%s: %d bytes, want [%d, %d]", tc.name, n, tc.min, tc.max)
		}
	}
}

func TestMessagesDecode(t *testing.T) {
	at := time.Now()
	var giant ingestv1.PublishRequest
	if err := proto.Unmarshal(GiantCountBatch(3), &giant); err != nil || len(giant.GetEvents()) != 3 {
		t.Errorf("giant count batch of 3: %d events, %v", len(giant.GetEvents()), err)
	}
	// 12 bytes of envelope and 3 a further event: 17 fit in 64 bytes.
	body := GiantCountREST(64)
	if want := `{"events":[` + strings.Repeat(`{},`, 16) + `{}]}`; string(body) != want {
		t.Errorf("REST giant count of 64 bytes: %s, want %s", body, want)
	}

	reg, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	line, ok := reg.Lookup(LogLineType)
	if !ok {
		t.Fatal("no LogLine contract")
	}
	if _, err := line.CheckJSON(LogLineJSON(streamMessageBytes, at)); err != nil {
		t.Errorf("the stream batches' LogLine is not valid: %v", err)
	}
	if _, err := line.CheckJSON(LogLineJSON(1, at)); err != nil {
		t.Errorf("the violation bombs' LogLine is not valid: %v", err)
	}

	var batch ingestv1.PublishStreamRequest
	if err := proto.Unmarshal(StreamBatch(3, 10, at), &batch); err != nil {
		t.Fatal(err)
	}
	for i, ev := range batch.GetEvents() {
		if err := reg.Validate(ev); err != nil {
			t.Errorf("stream batch event %d: envelope: %v", i, err)
		}
	}

	var bomb ingestv1.PublishRequest
	if err := proto.Unmarshal(ViolationGRPC(20, at), &bomb); err != nil || len(bomb.GetEvents()) != 1 {
		t.Fatalf("gRPC violation bomb: %d events, %v", len(bomb.GetEvents()), err)
	}
	var ve *contract.ViolationError
	if err := reg.Validate(bomb.GetEvents()[0]); !errors.As(err, &ve) || len(ve.Violations) < 20 {
		t.Errorf("gRPC violation bomb of 20 keys: %v, want a violation a key", err)
	}
}

func TestErrorDomainIsTheGateways(t *testing.T) {
	if ErrorDomain != gateway.ErrorDomain {
		t.Errorf("ErrorDomain %q, the gateway's is %q", ErrorDomain, gateway.ErrorDomain)
	}
}

func TestAnswers(t *testing.T) {
	typed, err := status.New(codes.InvalidArgument, "too many").WithDetails(
		&errdetails.ErrorInfo{Reason: "BATCH_TOO_LARGE", Domain: ErrorDomain})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := status.New(codes.InvalidArgument, "x").WithDetails(&errdetails.ErrorInfo{Reason: "R", Domain: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	rest := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	for _, tc := range []struct {
		name string
		kind Kind
		got  func() (Kind, string)
	}{
		{"gRPC response", Typed, func() (Kind, string) { return GRPCAnswer(&ingestv1.PublishResponse{}, nil) }},
		{"gRPC ErrorInfo of the domain", Typed, func() (Kind, string) { return GRPCAnswer(nil, typed.Err()) }},
		{"gRPC ErrorInfo of another domain", Untyped, func() (Kind, string) { return GRPCAnswer(nil, foreign.Err()) }},
		{"gRPC bare status", Untyped, func() (Kind, string) {
			return GRPCAnswer(nil, status.Error(codes.ResourceExhausted, "grpc: received message larger than max"))
		}},
		{"gRPC not a status", Untyped, func() (Kind, string) { return GRPCAnswer(nil, io.ErrUnexpectedEOF) }},
		{"stream ended OK", Untyped, func() (Kind, string) { return StreamEnd(io.EOF) }},
		{"stream ended typed", Typed, func() (Kind, string) { return StreamEnd(typed.Err()) }},
		{"REST refusal", Typed, func() (Kind, string) { return RESTAnswer(rest(413), []byte(`{"reason":"BATCH_TOO_LARGE"}`), nil) }},
		{"REST 503 refusal", Typed, func() (Kind, string) { return RESTAnswer(rest(503), []byte(`{"reason":"UNAVAILABLE"}`), nil) }},
		{"REST results", Typed, func() (Kind, string) {
			return RESTAnswer(rest(422), []byte(`{"results":[{"outcome":"REJECTED","rejection":{"reason":"SCHEMA_VIOLATION"}}]}`), nil)
		}},
		{"REST 500", Untyped, func() (Kind, string) { return RESTAnswer(rest(500), []byte(`{"reason":"UNAVAILABLE"}`), nil) }},
		{"REST without a reason", Untyped, func() (Kind, string) { return RESTAnswer(rest(400), []byte(`{}`), nil) }},
		{"REST not JSON", Untyped, func() (Kind, string) { return RESTAnswer(rest(400), []byte(`oops`), nil) }},
		{"REST transport error", Untyped, func() (Kind, string) { return RESTAnswer(nil, nil, io.ErrUnexpectedEOF) }},
	} {
		if k, what := tc.got(); k != tc.kind {
			t.Errorf("%s: %s (%s), want %s", tc.name, k, what, tc.kind)
		}
	}
}

func TestParseRuntime(t *testing.T) {
	body := []byte("# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n" +
		"go_memstats_heap_alloc_bytes 1.2345678e+07\ngo_memstats_heap_alloc_bytes_total 9\n")
	r, err := parseRuntime(body)
	if err != nil || r.Goroutines != 42 || r.HeapAlloc != 12345678 {
		t.Errorf("parseRuntime: %+v, %v", r, err)
	}
	if _, err := parseRuntime([]byte("go_goroutines 1\n")); err == nil {
		t.Error("parseRuntime without the heap gauge: no error")
	}
}

func TestParseStatusKB(t *testing.T) {
	status := []byte("Name:\tsluice\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n")
	if n, err := parseStatusKB(status, "VmHWM"); err != nil || n != 200<<20 {
		t.Errorf("VmHWM: %d, %v", n, err)
	}
	if _, err := parseStatusKB(status, "VmSwap"); err == nil {
		t.Error("a missing field: no error")
	}
}
