package waitfor

import (
	"testing"
	"time"
)

// tick is how often a condition is checked.
const tick = 2 * time.Millisecond

// Condition checks cond until it holds; at d it fails the test, naming
// what it waited for.
func Condition(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for !cond() {
		select {
		case <-ticker.C:
		case <-deadline.C:
			t.Fatalf("waited %v in vain for %s", d, what)
		}
	}
}
