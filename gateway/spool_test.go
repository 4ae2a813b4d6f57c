package gateway_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/record"
)

// kafkaOutage drops every produce request while it is on: faults injected
// at the in-process broker; the producer, spool and gateway are real.
type kafkaOutage struct{ on atomic.Bool }

func (o *kafkaOutage) install(c *kfake.Cluster) {
	c.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if o.on.Load() {
			return nil, errors.New("injected outage"), true
		}
		return nil, nil, false
	})
}

func spoolAt(dir string, maxBytes int64) func(t testing.TB) *buffer.Spool {
	return func(t testing.TB) *buffer.Spool {
		cfg := buffer.NewDefaultConfig(dir)
		cfg.MinFreeBytes = 1
		cfg.MaxBytes = maxBytes
		cfg.SegmentBytes = min(maxBytes/4, cfg.SegmentBytes)
		s, err := buffer.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestKafkaOutageSpools: with Kafka refusing produce requests, events are
// ACCEPTED with durability LOCAL_DISK; once the spool's cap is reached
// they are refused BUFFER_FULL with Retry-After over both transports; when
// Kafka is back the spool drains and every acknowledged event is there,
// in order per key.
func TestKafkaOutageSpools(t *testing.T) {
	var outage kafkaOutage
	h := newHarness(t, harnessOpts{
		spool: spoolAt(t.TempDir(), 48<<10),
		admission: func(c *admission.Config) {
			c.LatencyThreshold = 300 * time.Millisecond
			c.DrainTimeout = time.Second
			c.DrainBackoffMax = 200 * time.Millisecond
		},
	})
	outage.install(h.cluster)
	outage.on.Store(true)

	var acked []string
	sawFull := map[string]bool{}
	for i := 0; i < 400 && len(sawFull) < 2; i++ {
		e := ev{ID: fmt.Sprintf("out-%04d", i), Type: typeLog, Key: fmt.Sprintf("svc-%d", i%3), At: h.clock.Now(), JSON: examples.LogLineJSON}
		if i%2 == 0 {
			resp, body := h.postREST(keyAll, restBody(e))
			res := mustResults(t, body)
			switch {
			case resp.StatusCode == http.StatusOK:
				if res[0].GetDurability() != ingestv1.Durability_LOCAL_DISK {
					t.Fatalf("during the outage: %v", res[0])
				}
				acked = append(acked, e.ID)
			case resp.StatusCode == http.StatusServiceUnavailable && res[0].GetRejection().GetReason() == ingestv1.Reason_BUFFER_FULL:
				checkREST(t, expect{refusal{reason: ingestv1.Reason_BUFFER_FULL, retryAfter: res[0].GetRejection().GetRetryAfter().AsDuration()}, 503, codes.OK}, resp, body)
				if res[0].GetRejection().GetRetryAfter().AsDuration() < time.Second {
					t.Fatalf("BUFFER_FULL retry_after %v", res[0].GetRejection().GetRetryAfter())
				}
				sawFull["rest"] = true
			default:
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			continue
		}
		out, err := h.publishGRPC(keyAll, e)
		if status.Code(err) == codes.Unavailable {
			// Every event refused for a full spool: the request is refused
			// whole, with the reason and the wait.
			var got refusal
			for _, d := range status.Convert(err).Details() {
				switch d := d.(type) {
				case *errdetails.ErrorInfo:
					got.reason = ingestv1.Reason(ingestv1.Reason_value[d.GetReason()])
				case *errdetails.RetryInfo:
					got.retryAfter = d.GetRetryDelay().AsDuration()
				}
			}
			if got.reason != ingestv1.Reason_BUFFER_FULL || got.retryAfter < time.Second {
				t.Fatalf("gRPC refusal %v: %+v", err, got)
			}
			sawFull["grpc"] = true
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		r := out.GetResults()[0]
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED || r.GetDurability() != ingestv1.Durability_LOCAL_DISK {
			t.Fatalf("result %v", r)
		}
		acked = append(acked, e.ID)
	}
	if len(sawFull) < 2 || len(acked) == 0 {
		t.Fatalf("acked %d, BUFFER_FULL seen on %v: the cap was never reached on both transports", len(acked), sawFull)
	}

	outage.on.Store(false)
	recs := h.consumeIDs(h.topics[typeLog], acked)
	seen := map[string]bool{}
	lastByKey := map[string]string{}
	for _, r := range recs {
		id := header(r, record.HeaderEventID)
		if seen[id] {
			continue
		}
		seen[id] = true
		if prev := lastByKey[string(r.Key)]; id < prev {
			t.Fatalf("key %s: %s after %s", r.Key, id, prev)
		}
		lastByKey[string(r.Key)] = id
	}
	for _, id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged %s is not in Kafka", id)
		}
	}
	// Drained: new events go straight to Kafka again.
	eventually(t, "admission back to DIRECT", func() bool { return h.admission.Mode() == admission.ModeDirect })
	e := ev{ID: "after", Type: typeLog, Key: "svc-0", At: h.clock.Now(), JSON: examples.LogLineJSON}
	out, err := h.publishGRPC(keyAll, e)
	if err != nil {
		t.Fatal(err)
	}
	if d := out.GetResults()[0].GetDurability(); d != ingestv1.Durability_KAFKA {
		t.Fatalf("after the drain: durability %v (mode %v)", d, h.admission.Mode())
	}
}

// TestTooLargeForTheSpool: an event whose record the spool can never take
// is refused EVENT_TOO_LARGE, not retryable, over both transports, while
// the events beside it are spooled; before, it was UNAVAILABLE on every
// retry.
func TestTooLargeForTheSpool(t *testing.T) {
	h := newHarness(t, harnessOpts{
		spool: func(t testing.TB) *buffer.Spool {
			cfg := buffer.NewDefaultConfig(t.TempDir())
			cfg.MinFreeBytes, cfg.MaxRecordBytes = 1, 1024
			s, err := buffer.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		admission: func(c *admission.Config) { c.SpoolFirst = true },
	})
	big := map[string]string{}
	for i := range 8 {
		big[fmt.Sprintf("a%d", i)] = strings.Repeat("x", 200) // headers over 1 KiB
	}
	small := ev{ID: "fits", Type: typeLog, Key: "k", At: h.clock.Now(), JSON: examples.LogLineJSON}
	large := ev{ID: "too-large", Type: typeLog, Key: "k", At: h.clock.Now(), JSON: examples.LogLineJSON, Attrs: big}
	check := func(transport string, res []*ingestv1.EventResult) {
		t.Helper()
		if res[0].GetOutcome() != ingestv1.Outcome_ACCEPTED || res[0].GetDurability() != ingestv1.Durability_LOCAL_DISK {
			t.Errorf("%s: the event that fits: %v", transport, res[0])
		}
		if r := res[1].GetRejection(); r.GetReason() != ingestv1.Reason_EVENT_TOO_LARGE || r.GetRetryable() {
			t.Errorf("%s: the event too large for the spool: %v, want EVENT_TOO_LARGE, not retryable", transport, res[1])
		}
	}
	resp, body := h.postREST(keyAll, restBody(small, large))
	if resp.StatusCode != http.StatusMultiStatus {
		t.Errorf("REST status %d, want 207", resp.StatusCode)
	}
	check("REST", mustResults(t, body))
	small.ID, large.ID = "fits-grpc", "too-large-grpc"
	pr, err := h.publishGRPC(keyAll, small, large)
	if err != nil {
		t.Fatal(err)
	}
	check("gRPC", pr.GetResults())
}
