package buffer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkAppend measures appends of one 256-byte record by concurrent
// appenders on a real directory with FsyncBatch: appends/s and how many
// records share each fdatasync.
func BenchmarkAppend(b *testing.B) {
	rec := payload(0, 256)
	for _, appenders := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.Fsync = FsyncBatch
			reg := prometheus.NewRegistry()
			s := openSpool(b, cfg, WithLogger(discardLogger), WithRegisterer(reg))
			var next atomic.Int64
			var wg sync.WaitGroup
			b.SetBytes(int64(len(rec)))
			b.ResetTimer()
			for range appenders {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := s.Append(context.Background(), rec); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			fsyncs := metricValue(b, reg, "sluice_spool_fsyncs_total")
			b.ReportMetric(float64(b.N)/max(fsyncs, 1), "records/fsync")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}
