package pull

import (
	"context"
	"net/http"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/pulltest"
	"github.com/sluicehq/sluice/internal/tracing"
)

// spanIngester accepts every event and keeps the span context each page
// was judged under.
type spanIngester struct {
	mu    sync.Mutex
	pages []trace.SpanContext
}

func (s *spanIngester) Ingest(ctx context.Context, src string, events []*ingestv1.Event) []*ingestv1.EventResult {
	s.mu.Lock()
	s.pages = append(s.pages, trace.SpanContextFromContext(ctx))
	s.mu.Unlock()
	return acceptAll{}.Ingest(ctx, src, events)
}

// TestTracingPollPage: each page is admitted under a root `poll {poller}`
// span, which the ingester sees (and so the page's records carry); with
// no provider there is no span.
func TestTracingPollPage(t *testing.T) {
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			pulltest.CursorPage(w, pulltest.Items("a", 0, 3), "c1")
		case "c1":
			pulltest.CursorPage(w, pulltest.Items("b", 0, 2), "c2")
		default:
			pulltest.CursorPage(w, nil, "")
		}
	})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	for _, traced := range []bool{true, false} {
		ing := &spanIngester{}
		clk := pulltest.NewClock()
		var opts []Option
		if traced {
			opts = append(opts, WithTracerProvider(tp))
		}
		// The caller's context carries a span: a page's span is a root
		// all the same.
		parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled}))
		p, _ := newTestPoller(t, testConfig("partner", srv.URL), ing, &pulltest.Store[CursorRecord]{}, clk, opts...)
		ctx, cancel := context.WithCancel(parent)
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
		cancel()
		<-done
		ing.mu.Lock()
		pages := ing.pages
		ing.mu.Unlock()
		if len(pages) != 2 {
			t.Fatalf("traced %v: %d pages ingested, want 2", traced, len(pages))
		}
		if !traced {
			for _, sc := range pages {
				if sc.TraceID() != (trace.TraceID{1}) {
					t.Errorf("untraced: a page ingested under %v, want the caller's context", sc)
				}
			}
			continue
		}
		spans := rec.Ended()
		if len(spans) != 2 {
			t.Fatalf("%d spans, want one per page", len(spans))
		}
		for i, s := range spans {
			if s.Name() != "poll partner" || s.SpanKind() != trace.SpanKindInternal || s.Parent().IsValid() {
				t.Errorf("span %q kind %v parent %v: want a root poll partner", s.Name(), s.SpanKind(), s.Parent())
			}
			if !s.SpanContext().Equal(pages[i]) {
				t.Errorf("page %d ingested under %v, want its span %v", i, pages[i], s.SpanContext())
			}
			want := map[string]int64{tracing.AttrEvents: 3, tracing.AttrOutcome + ".accepted": 3}
			if i == 1 {
				want = map[string]int64{tracing.AttrEvents: 2, tracing.AttrOutcome + ".accepted": 2}
			}
			for _, kv := range s.Attributes() {
				if w, ok := want[string(kv.Key)]; ok && kv.Value.AsInt64() != w {
					t.Errorf("page %d: %s = %v, want %d", i, kv.Key, kv.Value.AsInt64(), w)
				}
			}
		}
	}
}
