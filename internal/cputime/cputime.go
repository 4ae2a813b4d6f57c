// Package cputime reads the CPU time the process has used, for the
// benchmarks that report CPU per event.
package cputime

import "time"

// Process is the user+system CPU time of this process so far, and
// whether it could be read (false where the platform has no getrusage).
func Process() (time.Duration, bool) { return process() }
