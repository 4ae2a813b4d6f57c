//go:build !unix

package loadgen

import "time"

// selfCPU is not measured off unix; reports show 0.
func selfCPU() time.Duration { return 0 }
