package ownership

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/pull"
)

// The runner's tests share internal/pulltest with pull's; the poller
// config is pull's testConfig again, which pull's own tests cannot import
// from a package that imports pull.

// testConfig is a cursor poller of base with items at /data.
func testConfig(name, base string) pull.Config {
	c := pull.NewDefaultConfig()
	c.Name = name
	c.URL = base + "/items?cursor={cursor}"
	c.Interval = time.Hour
	c.RequestTimeout = 5 * time.Second
	c.Pagination = pull.PaginationConfig{Type: pull.PaginateCursor, Cursor: "/next", StartPage: 1}
	c.Items = "/data"
	c.Mapping = pull.MappingConfig{ID: eventmap.Pointer("/id"), Type: eventmap.FixedType("test.Item"),
		OccurredAt: eventmap.Pointer("/at"), PartitionKey: eventmap.Pointer("/key"), Payload: "/body"}
	c.MaxRetryAfter = 10 * time.Minute
	c.Backoff = backoff.Config{Initial: time.Second, Max: 30 * time.Second}
	c.Breaker = pull.BreakerConfig{Failures: 3, Cooldown: time.Minute}
	return c
}

// eventually checks cond until it holds, or fails the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
