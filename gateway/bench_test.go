package gateway_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/publish"
)

// BenchmarkPublishGRPC is the gateway end to end over loopback gRPC into
// the in-process Kafka: 16 concurrent callers, 100 log lines (~300 bytes
// of protobuf each) per Publish, with the spool off (DIRECT) and forced on
// (every event fsync'd in the spool, then drained). The two run in the
// same process, so their ratio is what to read.
func BenchmarkPublishGRPC(b *testing.B) {
	var line logsv1.LogLine
	if err := protojson.Unmarshal(examples.LogLineJSON, &line); err != nil {
		b.Fatal(err)
	}
	payload, err := proto.Marshal(&line)
	if err != nil {
		b.Fatal(err)
	}
	for _, spoolFirst := range []bool{false, true} {
		b.Run(fmt.Sprintf("spool_first=%v", spoolFirst), func(b *testing.B) {
			o := harnessOpts{config: func(c *gateway.Config) {
				c.Limits.MaxEventsPerRequest = 100
				c.Sources[2].Burst = 100 // the slow source; unused here
			}}
			if spoolFirst {
				o.spool = spoolAt(b.TempDir(), 1<<30)
				o.admission = func(c *publish.AdmissionConfig) { c.SpoolFirst = true }
			}
			h := newHarness(b, o)
			ctx := withKey(context.Background(), keyAll)
			at := h.clock.Now()
			var next atomic.Int64
			b.SetParallelism(16) // 32 callers: enough to keep both CPUs busy in both modes
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					req := &ingestv1.PublishRequest{Events: make([]*ingestv1.Event, 100)}
					for j := range req.Events {
						req.Events[j] = ev{ID: fmt.Sprintf("b-%d-%d", i, j), Type: typeLog, Key: fmt.Sprintf("svc-%d", j%16), At: at, Binary: payload}.proto()
					}
					cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					out, err := h.client.Publish(cctx, req)
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
					for _, r := range out.GetResults() {
						if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
							b.Errorf("result %v", r)
							return
						}
					}
				}
			})
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
