package gateway_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/gateway"
)

// TestMemoryLimitConfig: a negative or tiny memory_limit is refused by
// name, and so is a dedup window that would not fit in a quarter of it;
// zero (no limit) and a bound with room pass. The runtime's soft limit
// leaves headroom below the bound.
func TestMemoryLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		limit      int64
		maxEntries int
		field      string // "" when the config is valid
	}{
		{-1, 1_000_000, "memory_limit"},
		{64 << 20, 1_000_000, "memory_limit"},
		{0, 1_000_000, ""},
		{512 << 20, 1_000_000, ""},
		{256 << 20, 1_000_000, "dedup.max_entries"},
		{256 << 20, 500_000, ""},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		cfg.Dedup.MaxEntries = tc.maxEntries
		err := cfg.Validate()
		var ce *gateway.ConfigError
		if (tc.field == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Field != tc.field)) {
			t.Errorf("memory_limit %d, max_entries %d: got %v, want an error on %q", tc.limit, tc.maxEntries, err, tc.field)
		}
	}
	for _, tc := range []struct{ limit, want int64 }{
		{0, 0},
		{512 << 20, 512<<20 - (512<<20)/10},
		{200 << 20, 152 << 20},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		if got := cfg.RuntimeMemoryLimit(); got != tc.want {
			t.Errorf("RuntimeMemoryLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
