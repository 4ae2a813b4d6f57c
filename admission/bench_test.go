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
	"github.com/sluicehq/sluice/record"
)

// BenchmarkAdmit: 8 senders admit requests of 100 records, to Kafka
// (spool_first=false) or through the spool (true: appended, synced,
// answered, then drained to Kafka). cpu-µs/record is the process's CPU,
// the broker's included, from the first request until every record is in
// Kafka and, with the spool, acknowledged there; their ratio is the spool's
// price, as scripts/bench.sh's spool-forced-on rows measure it end to end.
//
// shares=true splits the spool between the records' source and another
// (WithSourceShares): each spooled record is charged and given back.
func BenchmarkAdmit(b *testing.B) {
	for _, first := range []bool{false, true} {
		b.Run(fmt.Sprintf("spool_first=%v", first), func(b *testing.B) { benchAdmit(b, first, false) })
	}
	b.Run("spool_first=true/shares=true", func(b *testing.B) { benchAdmit(b, true, true) })
}

func benchAdmit(b *testing.B, spoolFirst, shares bool) {
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
	opts := []Option{WithLogger(discardLogger())}
	if shares {
		opts = append(opts, WithSourceShares(map[string]float64{"s": 1, "other": 1}, 0.5))
	}
	a, err := New(cfg, p, s, opts...)
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

// BenchmarkChargePending prices what a restart over a full spool adds to
// New with per-source shares: reading and decoding every spooled record
// once (buffer.Spool.Pending) to charge it to its source. MB/s is of the
// spool's record bytes.
func BenchmarkChargePending(b *testing.B) {
	const total = 64 << 20
	scfg := buffer.NewDefaultConfig(b.TempDir())
	scfg.MinFreeBytes, scfg.Fsync = 1, buffer.FsyncNever
	s, err := buffer.Open(scfg, buffer.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var size int64
	for i := 0; size < total; i += 100 {
		var batch [][]byte
		for _, r := range fromSource(fmt.Sprint("s", i%4), "bench", i, 100, 1000) {
			enc := record.AppendSpooled(nil, r)
			size += int64(len(enc))
			batch = append(batch, enc)
		}
		if _, err := s.Append(context.Background(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	weights := map[string]float64{"s0": 1, "s1": 1, "s2": 1, "s3": 1}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		sh, err := newSpoolShares(s.Config(), 0.5, weights)
		if err != nil {
			b.Fatal(err)
		}
		if err := sh.chargePending(s); err != nil {
			b.Fatal(err)
		}
	}
}
