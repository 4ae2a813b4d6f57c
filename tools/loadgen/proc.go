package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/procfs"
)

// ProcStats is what a watched process used over a run.
type ProcStats struct {
	PID int `json:"pid"`
	// CPU is user+system time spent during the run.
	CPU time.Duration `json:"cpu_ns"`
	// MaxRSS is the largest VmRSS sampled, every 100 ms, during the run.
	MaxRSS int64 `json:"max_rss_bytes"`
}

// watcher samples a process's CPU at start and stop and its RSS in
// between. Its goroutine is stopped and waited for by stop.
type watcher struct {
	pid      int
	cpuStart time.Duration
	mu       sync.Mutex
	maxRSS   int64
	cancel   context.CancelFunc
	done     chan struct{}
}

func startWatcher(pid int) (*watcher, error) {
	cpu, err := procfs.CPU(pid)
	if err != nil {
		return nil, fmt.Errorf("loadgen: --watch-pid %d: %w", pid, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{pid: pid, cpuStart: cpu, cancel: cancel, done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				w.sample()
			}
		}
	}()
	return w, nil
}

func (w *watcher) sample() {
	mem, err := procfs.ReadMemory(w.pid)
	if err != nil {
		return // the process may be gone; stop reports what was seen
	}
	w.mu.Lock()
	w.maxRSS = max(w.maxRSS, mem.RSS)
	w.mu.Unlock()
}

func (w *watcher) stop() (*ProcStats, error) {
	w.cancel()
	<-w.done
	w.sample()
	cpu, err := procfs.CPU(w.pid)
	if err != nil {
		return nil, fmt.Errorf("loadgen: --watch-pid %d: %w", w.pid, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return &ProcStats{PID: w.pid, CPU: cpu - w.cpuStart, MaxRSS: w.maxRSS}, nil
}
