package hostile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// peak is the largest of a series of samples and how many were taken.
type peak struct {
	mu      sync.Mutex
	max     int64
	samples int
	failed  int
}

func (p *peak) observe(v int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		return
	}
	p.samples++
	p.max = max(p.max, v)
}

// value is the largest sample, with the number of samples taken and of
// those that failed.
func (p *peak) value() (peak int64, samples, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max, p.samples, p.failed
}

// sample calls read now and every interval until ctx ends, keeping the
// largest value in p; a read that ctx's end cut off is not counted. It
// returns when ctx ends: the caller runs it in a goroutine it waits for.
func sample(ctx context.Context, every time.Duration, p *peak, read func(context.Context) (int64, error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		v, err := read(ctx)
		if ctx.Err() != nil {
			return
		}
		p.observe(v, err)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// adminProbe reads a gateway's admin listener; Pprof must be on for forceGC.
type adminProbe struct {
	Addr   string // host:port
	Client *http.Client
}

// runtimeFigures is what the gateway's Go runtime says of itself on /metrics.
type runtimeFigures struct {
	HeapAlloc  int64 // go_memstats_heap_alloc_bytes: bytes of live and not yet swept heap objects
	Goroutines int64 // go_goroutines
	// IdleStreamsClosed is sluice_streams_idle_closed_total, or -1 for a
	// gateway that does not have it.
	IdleStreamsClosed int64
}

// ready is nil once /readyz answers 200.
func (a adminProbe) ready(ctx context.Context) error {
	body, err := a.get(ctx, "/readyz")
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(body)))
	}
	return nil
}

// forceGC runs a garbage collection in the gateway: a heap profile asked
// for with gc=1 is taken after one. The profile is discarded.
func (a adminProbe) forceGC(ctx context.Context) error {
	_, err := a.get(ctx, "/debug/pprof/heap?gc=1")
	return err
}

// runtime reads the heap and goroutine gauges from /metrics.
func (a adminProbe) runtime(ctx context.Context) (runtimeFigures, error) {
	body, err := a.get(ctx, "/metrics")
	if err != nil {
		return runtimeFigures{}, err
	}
	return parseRuntime(body)
}

// series reads from /metrics every sample of the metrics named, by its
// series as the text format writes it: name{label="value",...}.
func (a adminProbe) series(ctx context.Context, names ...string) (map[string]float64, error) {
	body, err := a.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseSeries(body, names)
}

func parseSeries(body []byte, names []string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		series, value := line[:i], line[i+1:]
		name, _, _ := strings.Cut(series, "{")
		if !slices.Contains(names, name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("hostile: /metrics: %s %q is not a number", series, value)
		}
		out[series] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hostile: /metrics: %w", err)
	}
	return out, nil
}

// parseRuntime finds the two gauges in the Prometheus text format.
func parseRuntime(body []byte) (runtimeFigures, error) {
	r := runtimeFigures{IdleStreamsClosed: -1}
	var heap, goroutines bool
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "go_memstats_heap_alloc_bytes":
			dst, heap = &r.HeapAlloc, true
		case "go_goroutines":
			dst, goroutines = &r.Goroutines, true
		case "sluice_streams_idle_closed_total":
			dst = &r.IdleStreamsClosed
		default:
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return runtimeFigures{}, fmt.Errorf("hostile: /metrics: %s %q is not a number", name, value)
		}
		*dst = int64(v)
	}
	if err := sc.Err(); err != nil {
		return runtimeFigures{}, fmt.Errorf("hostile: /metrics: %w", err)
	}
	if !heap || !goroutines {
		return runtimeFigures{}, fmt.Errorf("hostile: /metrics: no go_memstats_heap_alloc_bytes or go_goroutines")
	}
	return r, nil
}

// get returns the body of a 200 answer, or an error with the body of
// another.
func (a adminProbe) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.Addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("hostile: admin %s: HTTP %d", path, resp.StatusCode)
	}
	return body, nil
}
