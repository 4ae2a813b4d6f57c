//go:build !unix

package consumer

import (
	"testing"
	"time"
)

// processCPU is not measured here: CPU per event reads 0.
func processCPU(*testing.B) time.Duration { return 0 }
