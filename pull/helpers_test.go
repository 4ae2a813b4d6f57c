package pull

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/waitfor"
)

// testConfig is a cursor poller of url with items at /data and test items.
func testConfig(name, base string) Config {
	c := NewDefaultConfig()
	c.Name = name
	c.URL = base + "/items?cursor={cursor}"
	c.Interval = time.Hour // the fake clock parks here: caught up
	c.RequestTimeout = 5 * time.Second
	c.Pagination = PaginationConfig{Type: PaginateCursor, Cursor: "/next", StartPage: 1}
	c.Items = "/data"
	c.Mapping = MappingConfig{ID: eventmap.Pointer("/id"), Type: eventmap.FixedType("test.Item"),
		OccurredAt: eventmap.Pointer("/at"), PartitionKey: eventmap.Pointer("/key"), Payload: "/body"}
	c.MaxRetryAfter = 10 * time.Minute
	c.Backoff = backoff.Config{Initial: time.Second, Max: 30 * time.Second}
	c.Breaker = BreakerConfig{Failures: 3, Cooldown: time.Minute}
	return c
}

func identityJitter(d time.Duration) time.Duration { return d }

// eventually checks cond until it holds, or fails the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTestPoller(t testing.TB, cfg Config, ing Ingester, store CursorStore, clk Clock, opts ...Option) (*Poller, *Metrics) {
	t.Helper()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithClock(clk), WithLogger(quietLog()), WithMetrics(m), WithJitter(identityJitter)}, opts...)
	p, err := NewPoller(cfg, ing, store, all...)
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func counter(t testing.TB, m *Metrics, vec string, labels ...string) float64 {
	t.Helper()
	switch vec {
	case "requests":
		return testutil.ToFloat64(m.requests.WithLabelValues(labels...))
	case "items":
		return testutil.ToFloat64(m.items.WithLabelValues(labels...))
	case "pages":
		return testutil.ToFloat64(m.pages.WithLabelValues(labels...))
	case "pageFailures":
		return testutil.ToFloat64(m.pageFailures.WithLabelValues(labels...))
	case "waited":
		return testutil.ToFloat64(m.waited.WithLabelValues(labels...))
	case "circuit":
		return testutil.ToFloat64(m.circuit.WithLabelValues(labels...))
	case "tokenRefresh":
		return testutil.ToFloat64(m.tokenRefresh.WithLabelValues(labels...))
	case "authFailures":
		return testutil.ToFloat64(m.authFailures.WithLabelValues(labels...))
	case "up":
		return testutil.ToFloat64(m.up.WithLabelValues(labels...))
	}
	t.Fatalf("no metric %s", vec)
	return 0
}

func joinDur(ds []time.Duration) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}
