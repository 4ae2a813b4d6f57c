package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's tick rate.
const userHZ = 100

// ProcError is a /proc file that does not read as expected.
type ProcError struct {
	File string
	Msg  string
}

func (e *ProcError) Error() string { return "loadgen: " + e.File + ": " + e.Msg }

// ParseProcStat returns utime+stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may hold spaces and parentheses, so
// fields are counted from the last ')'.
func ParseProcStat(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, &ProcError{File: "stat", Msg: "no ')' after the command name"}
	}
	// After ')': state is field 3, utime field 14, stime field 15.
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 13 {
		return 0, &ProcError{File: "stat", Msg: fmt.Sprintf("%d fields after the command name, want >= 13", len(fields))}
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(string(f), 10, 63)
		if err != nil {
			return 0, &ProcError{File: "stat", Msg: "cpu time " + strconv.Quote(string(f)) + " is not a count"}
		}
		ticks += n
	}
	if ticks > uint64(1<<62)/uint64(time.Second/userHZ) {
		return 0, &ProcError{File: "stat", Msg: "cpu time out of range"}
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// ParseProcStatusRSS returns VmRSS of a /proc/PID/status file, in bytes.
func ParseProcStatusRSS(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, &ProcError{File: "status", Msg: "VmRSS is not \"<n> kB\""}
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, &ProcError{File: "status", Msg: "VmRSS " + strconv.Quote(string(f[0])) + " is not a size"}
		}
		return kb << 10, nil
	}
	return 0, &ProcError{File: "status", Msg: "no VmRSS line"}
}

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

func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseProcStat(b)
}

func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return ParseProcStatusRSS(b)
}

func startWatcher(pid int) (*watcher, error) {
	cpu, err := readCPU(pid)
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
	rss, err := readRSS(w.pid)
	if err != nil {
		return // the process may be gone; stop reports what was seen
	}
	w.mu.Lock()
	w.maxRSS = max(w.maxRSS, rss)
	w.mu.Unlock()
}

func (w *watcher) stop() (*ProcStats, error) {
	w.cancel()
	<-w.done
	w.sample()
	cpu, err := readCPU(w.pid)
	if err != nil {
		return nil, fmt.Errorf("loadgen: --watch-pid %d: %w", w.pid, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return &ProcStats{PID: w.pid, CPU: cpu - w.cpuStart, MaxRSS: w.maxRSS}, nil
}
