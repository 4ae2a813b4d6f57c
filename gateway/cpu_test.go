package gateway

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/cputime"
)

// processCPU is the CPU time the process has used, user and system; 0
// where it cannot be read, so that CPU per event reads 0.
func processCPU(*testing.B) time.Duration {
	d, _ := cputime.Process()
	return d
}
