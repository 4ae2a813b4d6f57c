package pull

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/pulltest"
)

// BenchmarkPollPages polls a local partner with no limits: an endless
// cursor feed of 20 items a page, accepted by an in-memory ingester and
// saved to an in-memory store. It reports pages/s.
func BenchmarkPollPages(b *testing.B) {
	var page []map[string]any
	for i := range 20 {
		page = append(page, pulltest.Item(fmt.Sprint("x", i)))
	}
	srv := pulltest.NewPartner(b, func(n int, w http.ResponseWriter, r *http.Request) {
		c, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		pulltest.CursorPage(w, page, strconv.Itoa(c+1))
	})
	var committed atomic.Int64
	target := int64(b.N)
	done := make(chan struct{})
	var once sync.Once
	store := &countingStore{onSave: func() {
		if committed.Add(1) >= target {
			once.Do(func() { close(done) })
		}
	}}
	cfg := testConfig("bench", srv.URL)
	p, err := NewPoller(cfg, acceptAll{}, store, WithLogger(quietLog()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pages/s")
}

type acceptAll struct{}

func (acceptAll) Ingest(_ context.Context, _ string, events []*ingestv1.Event) []*ingestv1.EventResult {
	out := make([]*ingestv1.EventResult, len(events))
	for i, ev := range events {
		out[i] = &ingestv1.EventResult{Index: uint32(i), Id: ev.GetId(), Outcome: ingestv1.Outcome_ACCEPTED}
	}
	return out
}

type countingStore struct{ onSave func() }

func (*countingStore) Load(context.Context) (CursorRecord, bool, error) {
	return CursorRecord{}, false, nil
}

func (s *countingStore) Save(context.Context, CursorRecord) error {
	s.onSave()
	return nil
}

// TestIntegrationRetryAfterRealClock measures, with the real clock, the
// wait between a 429 with Retry-After: 2 and the retry. It runs only when
// asked for by name (go test -run Integration ./pull), as it takes about
// two seconds: the wait must be at least 2 s and at most 2 s plus a
// scheduling allowance (a Retry-After wait has no jitter).
func TestIntegrationRetryAfterRealClock(t *testing.T) {
	if f := flag.Lookup("test.run"); f == nil || !strings.Contains(f.Value.String(), "Integration") {
		t.Skip("real-clock measurement: run with -run Integration")
	}
	const allowance = 500 * time.Millisecond
	var mu sync.Mutex
	var times []time.Time
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "")
	})
	rec := pulltest.NewRecorder()
	p, err := NewPoller(testConfig("p", srv.URL), rec, &pulltest.Store[CursorRecord]{}, WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	stop := pulltest.Run(t, p)
	eventually(t, "the retried page", func() bool { return len(rec.IDs()) == 1 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	wait := times[1].Sub(times[0])
	t.Logf("measured wait after Retry-After: 2 = %v", wait)
	if wait < 2*time.Second || wait > 2*time.Second+allowance {
		t.Errorf("waited %v, want [2s, %v]", wait, 2*time.Second+allowance)
	}
}
