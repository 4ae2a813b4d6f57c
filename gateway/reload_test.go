package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/record"
)

// heldAdmitter holds each Admit until its release is closed, and keeps
// what it was given.
type heldAdmitter struct {
	mu      sync.Mutex
	records []*kgo.Record
	entered chan struct{}
	release chan struct{}
}

func (h *heldAdmitter) Admit(ctx context.Context, recs []*kgo.Record) []admission.Admitted {
	h.mu.Lock()
	h.records = append(h.records, recs...)
	h.mu.Unlock()
	h.entered <- struct{}{}
	<-h.release
	return acceptAll{}.Admit(ctx, recs)
}

// TestRequestKeepsItsContracts: a request in flight when the contracts
// are swapped is published with the version it was judged by; the next
// request is judged by the new one, and the served description follows.
func TestRequestKeepsItsContracts(t *testing.T) {
	const typ = "examples.shop.v1.OrderPlaced"
	v1, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := contract.Load(contracttest.Evolve(t, examples.Contracts,
		contracttest.AddField(typ, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL)), examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	fp := func(r *contract.Registry) string { c, _ := r.Lookup(typ); return c.Fingerprint() }
	versions, err := contract.NewVersions(v1, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Dedup.Window = 0
	cfg.Sources = []SourceConfig{{Name: "s", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	adm := &heldAdmitter{entered: make(chan struct{}, 4), release: make(chan struct{})}
	svc, err := New(cfg, versions, adm)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.grpcLis.Close(); srv.httpLis.Close() })
	handler := srv.http.Handler

	at := time.Now().UTC().Format(time.RFC3339)
	body := func(id, payload string) string {
		return `{"events":[{"id":"` + id + `","type":"` + typ + `","occurred_at":"` + at + `","payload":` + payload + `}]}`
	}
	withGiftWrap := strings.Replace(string(examples.OrderPlacedJSON), "{", `{"gift_wrap":true,`, 1)
	post := func(b string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(b))
		req.Header.Set("X-Api-Key", "k")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	get := func(path string) string {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.String()
	}
	if strings.Contains(get("/openapi.json"), "gift_wrap") {
		t.Fatal("v1's description has v2's field")
	}
	if rec := post(body("early", withGiftWrap)); rec.Code == http.StatusOK {
		t.Fatalf("v1 took a field only v2 has: %d %s", rec.Code, rec.Body)
	}

	inFlight := make(chan *httptest.ResponseRecorder, 1)
	go func() { inFlight <- post(body("in-flight", string(examples.OrderPlacedJSON))) }()
	<-adm.entered // judged by v1, waiting on Kafka
	if err := svc.PrepareContracts(v2); err != nil {
		t.Fatal(err)
	}
	versions.Swap(v2)
	go func() { inFlight <- post(body("after", withGiftWrap)) }()
	<-adm.entered
	close(adm.release)
	for range 2 {
		if rec := <-inFlight; rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	want := map[string]string{"in-flight": fp(v1), "after": fp(v2)}
	for _, r := range adm.records {
		h, err := record.ParseEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		if h.Fingerprint != want[h.ID] {
			t.Errorf("%s published with fingerprint %s, want %s", h.ID, h.Fingerprint, want[h.ID])
		}
	}
	if len(adm.records) != 2 {
		t.Fatalf("%d records published, want 2", len(adm.records))
	}
	if !strings.Contains(get("/openapi.json"), "gift_wrap") || !strings.Contains(get("/docs"), "gift_wrap") {
		t.Fatal("the description served is not v2's")
	}
	// A registry lacking a type the gateway publishes is refused before any swap.
	lacking, err := contract.Load(examples.Contracts, examples.Types[:1])
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.PrepareContracts(lacking); err == nil {
		t.Fatal("PrepareContracts took a registry without every type published")
	}
}
