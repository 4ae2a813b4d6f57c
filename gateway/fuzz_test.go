package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/eventtest"
)

// acceptAll stands in for Kafka at the edge: every record is acknowledged.
type acceptAll struct{}

func (acceptAll) Admit(_ context.Context, recs []*kgo.Record) []admission.Admitted {
	out := make([]admission.Admitted, len(recs))
	for i := range out {
		out[i].Durability = admission.DurabilityKafka
	}
	return out
}

// FuzzRESTPublish sends each input through the whole REST path (grpc-
// gateway's mux, the decoder, contracts, dedup) with a Kafka that accepts
// everything: the answer is never a 5xx other than a typed 503, and always
// a typed body.
func FuzzRESTPublish(f *testing.F) {
	for _, s := range eventtest.PublishBodies() {
		f.Add(s)
	}
	registry, err := contract.Load(examples.Contracts, examples.Types, contract.WithMaxDepth(8))
	if err != nil {
		f.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Limits.MaxDepth = 8
	cfg.Limits.MaxRequestBytes = 16 << 10
	cfg.Limits.MaxEventBytes = 4 << 10
	cfg.Dedup.MaxEntries = dedupShards * 16
	cfg.Sources = []SourceConfig{{Name: "fuzz", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	svc, err := New(cfg, served(registry), acceptAll{}, WithClock(func() time.Time { return now }))
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(svc)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.grpcLis.Close(); srv.httpLis.Close() })
	handler := srv.http.Handler

	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", bytes.NewReader(body))
		req.Header.Set("X-Api-Key", "k")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		code := rec.Code
		if code >= 500 && code != http.StatusServiceUnavailable {
			t.Fatalf("status %d for %q: %s", code, body, rec.Body)
		}
		out := rec.Body.Bytes()
		switch {
		case code == http.StatusOK || code == http.StatusMultiStatus:
			var pr ingestv1.PublishResponse
			if err := protojson.Unmarshal(out, &pr); err != nil {
				t.Fatalf("status %d, body %s: %v", code, out, err)
			}
		default:
			var pr ingestv1.PublishResponse
			var eb ingestv1.ErrorBody
			if protojson.Unmarshal(out, &pr) != nil && (protojson.Unmarshal(out, &eb) != nil || eb.GetReason() == ingestv1.Reason_REASON_UNSPECIFIED) {
				t.Fatalf("status %d with an untyped body %s", code, out)
			}
		}
		if strings.Contains(rec.Body.String(), "panic") {
			t.Fatalf("body mentions a panic: %s", out)
		}
	})
}
