package waitfor

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestConditionWaitsUntilItHolds(t *testing.T) {
	var n atomic.Int32
	Condition(t, time.Minute, "three checks", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
}

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	panic(r)
}

func TestConditionFailsAtTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("Condition did not fail the test: %v", p)
			}
		}()
		Condition(r, 10*time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.Contains(r.msg, "in vain for") {
		t.Fatalf("failure %q", r.msg)
	}
}
