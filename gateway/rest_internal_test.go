package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// failAll stands in for a Kafka that answers every record with err.
type failAll struct{ err error }

func (a failAll) Admit(_ context.Context, recs []*kgo.Record) []admission.Admitted {
	out := make([]admission.Admitted, len(recs))
	for i := range out {
		out[i].Err, out[i].Refusal = a.err, admission.RefusedRetryable
	}
	return out
}

// TestUnencodableAnswerRetryAfter: a REST answer that cannot be written as
// JSON (here a Kafka error whose text is not UTF-8, quoted in the event's
// rejection) is answered UNAVAILABLE with unavailable_retry_after, as
// every other UNAVAILABLE is, in the body and in Retry-After.
func TestUnencodableAnswerRetryAfter(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.UnavailableRetryAfter = 7 * time.Second
	cfg.Sources = []SourceConfig{{Name: "src", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	svc, err := New(cfg, served(registry), failAll{errors.New("broker says \xff\xfe")},
		WithClock(func() time.Time { return now }), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.grpcLis.Close(); srv.httpLis.Close() })

	body := `{"events":[{"id":"e-1","type":"examples.logs.v1.LogLine","occurred_at":"` + now.Format(time.RFC3339) +
		`","payload":` + string(examples.LogLineJSON) + `}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/events", bytes.NewReader([]byte(body)))
	req.Header.Set("X-Api-Key", "k")
	rec := httptest.NewRecorder()
	srv.http.Handler.ServeHTTP(rec, req)

	var eb ingestv1.ErrorBody
	if err := protojson.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
		t.Fatalf("status %d, body %s: %v", rec.Code, rec.Body, err)
	}
	if rec.Code != http.StatusServiceUnavailable || eb.GetReason() != ingestv1.Reason_UNAVAILABLE || !eb.GetRetryable() {
		t.Fatalf("status %d, body %s; want a retryable 503 UNAVAILABLE", rec.Code, rec.Body)
	}
	if got, want := rec.Header().Get("Retry-After"), "7"; got != want || eb.GetRetryAfter().AsDuration() != cfg.UnavailableRetryAfter {
		t.Errorf("Retry-After %q and retry_after %v, want %q and %v (unavailable_retry_after)", got, eb.GetRetryAfter().AsDuration(), want, cfg.UnavailableRetryAfter)
	}
}
