package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessGrows: CPU spent between two reads shows in the second.
func TestProcessGrows(t *testing.T) {
	before, ok := Process()
	if !ok {
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	x := uint64(1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for i := range 1 << 20 {
			x = x*6364136223846793005 + uint64(i)
		}
		if after, _ := Process(); after > before {
			return
		}
	}
	t.Fatalf("no CPU time counted after 10 s of spinning (%d)", x)
}
