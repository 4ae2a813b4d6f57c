//go:build unix

package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
)

// BenchmarkAdmit: 8 senders admit requests of 100 records, to Kafka
// (spool_first=false) or through the spool (true: appended, synced,
// answered, then drained to Kafka). cpu-µs/record is the process's CPU,
// the broker's included, from the first request until every record is in
// Kafka and, with the spool, acknowledged there; their ratio is the spool's
// price, as scripts/bench.sh's spool-forced-on rows measure it end to end.
func BenchmarkAdmit(b *testing.B) {
	for _, first := range []bool{false, true} {
		b.Run(fmt.Sprintf("spool_first=%v", first), func(b *testing.B) { benchAdmit(b, first) })
	}
}

func benchAdmit(b *testing.B, spoolFirst bool) {
	const perRequest, senders = 100, 8
	c := newCluster(b, []string{"bench"})
	p := newTestProducer(b, c.ListenAddrs(), nil)
	scfg := buffer.NewDefaultConfig(b.TempDir())
	scfg.MinFreeBytes = 1
	s, err := buffer.Open(scfg, buffer.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfg := NewDefaultConfig()
	cfg.SpoolFirst = spoolFirst
	a, err := New(cfg, p, s, WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()

	requests := make([][]*kgo.Record, (b.N+perRequest-1)/perRequest)
	for i := range requests {
		n := min(perRequest, b.N-i*perRequest)
		requests[i] = keyedAs(fmt.Sprint(i%senders, "-"), "bench", i*perRequest, n, 1000)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := processCPU(b)
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(requests) {
					return
				}
				for _, ad := range a.Admit(context.Background(), requests[i]) {
					if ad.Err != nil {
						b.Error(ad.Err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for !s.Empty() {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/record")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
