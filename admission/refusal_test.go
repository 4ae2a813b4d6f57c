package admission

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDrainPermanentRefusal: Kafka refuses a spooled record permanently
// (a topic whose max.message.bytes is below the batch, a producer not
// allowed to write the topic). The drainer must keep the record and every
// one behind it, and say so at once: readiness fails naming the Kafka
// error and the topic, sluice_spool_drain_blocked{reason} is 1 and
// sluice_spool_drain_refusals_total{reason} counts. It keeps retrying, and
// once the refusal stops (an operator fixed the topic) the records reach
// Kafka in order, the gauge goes back to 0 and readiness recovers.
func TestDrainPermanentRefusal(t *testing.T) {
	cases := []struct {
		name   string
		reason string // the metrics' label
		code   string // the Kafka error readiness names
		refuse func(t *testing.T, c *kfake.Cluster, topic string) (stop func())
	}{
		{
			name: "max.message.bytes below the batch", reason: "too_large", code: "MESSAGE_TOO_LARGE",
			refuse: func(t *testing.T, c *kfake.Cluster, topic string) func() {
				setTopicConfig(t, c, topic, "max.message.bytes", "64")
				return func() { setTopicConfig(t, c, topic, "max.message.bytes", "1048588") }
			},
		},
		{
			name: "topic authorization", reason: "unauthorized", code: "TOPIC_AUTHORIZATION_FAILED",
			refuse: func(t *testing.T, c *kfake.Cluster, topic string) func() {
				return answerProduce(c, kerr.TopicAuthorizationFailed)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const topic = "ingest.refused"
			c := newCluster(t, []string{topic})
			stop := tc.refuse(t, c, topic)
			p := newTestProducer(t, c.ListenAddrs(), nil)
			s := openSpool(t, t.TempDir(), nil)
			defer s.Close()
			reg := prometheus.NewRegistry()
			a := newTestAdmission(t, p, s, func(cfg *Config) { cfg.SpoolFirst = true }, reg)
			defer a.Close()

			recs := keyed(topic, 0, 3, 1)
			for i, r := range a.Admit(context.Background(), recs) {
				if r.Err != nil || r.Durability != DurabilityLocalDisk {
					t.Fatalf("r%d: %+v", i, r)
				}
			}
			var notReady error
			waitFor(t, "readiness to name the refusal", func() bool {
				notReady = ready(a)
				return notReady != nil && strings.Contains(notReady.Error(), tc.code) && strings.Contains(notReady.Error(), topic)
			})
			t.Logf("readiness: %v", notReady)
			if got := gaugeOf(t, reg, "sluice_spool_drain_blocked", tc.reason); got != 1 {
				t.Errorf("sluice_spool_drain_blocked{reason=%q} = %v while blocked, want 1", tc.reason, got)
			}
			if got := gaugeOf(t, reg, "sluice_spool_drain_refusals_total", tc.reason); got < 1 {
				t.Errorf("sluice_spool_drain_refusals_total{reason=%q} = %v, want >= 1", tc.reason, got)
			}
			if got := s.Stats().Records; got != int64(len(recs)) {
				t.Fatalf("the spool holds %d records while Kafka refuses them, want %d: nothing may be dropped", got, len(recs))
			}

			// The drainer still retries: once the refusal stops, the
			// records get through, in order, and everything recovers.
			stop()
			waitFor(t, "readiness to recover", func() bool { return ready(a) == nil })
			checkKeyOrder(t, consumeAll(t, c.ListenAddrs(), topic, len(recs)))
			waitFor(t, "the spool to empty", s.Empty)
			if got := gaugeOf(t, reg, "sluice_spool_drain_blocked", tc.reason); got != 0 {
				t.Errorf("sluice_spool_drain_blocked{reason=%q} = %v after the drain, want 0", tc.reason, got)
			}
		})
	}
}

// TestDrainRefusalMetricsFromStart: every reason of the drain's metrics
// exists at zero before any refusal, so that an alert sees the first.
func TestDrainRefusalMetricsFromStart(t *testing.T) {
	c := newCluster(t, []string{"ingest.t"})
	p := newTestProducer(t, c.ListenAddrs(), nil)
	s := openSpool(t, t.TempDir(), nil)
	defer s.Close()
	reg := prometheus.NewRegistry()
	a := newTestAdmission(t, p, s, nil, reg)
	defer a.Close()
	for _, reason := range []string{"too_large", "unauthorized", "invalid", "unsupported"} {
		for _, name := range []string{"sluice_spool_drain_blocked", "sluice_spool_drain_refusals_total"} {
			if got := gaugeOf(t, reg, name, reason); got != 0 {
				t.Errorf("%s{reason=%q} = %v at start, want 0", name, reason, got)
			}
		}
	}
}

func ready(a *Admission) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return a.Ready(ctx)
}

// gaugeOf is the value of the series of name with the label reason in
// reg, or -1 when there is none.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					if m.GetGauge() != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// setTopicConfig sets a topic's config in the cluster, as an operator
// would.
func setTopicConfig(t *testing.T, c *kfake.Cluster, topic, name, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).AlterTopicConfigs(waitCtx(t), []kadm.AlterConfig{{Name: name, Value: &value}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("set %s=%s on %s: %v", name, value, topic, err)
	}
}

// answerProduce makes the cluster answer every produce request with code
// for each of its partitions until stop is called.
func answerProduce(c *kfake.Cluster, code *kerr.Error) (stop func()) {
	var on atomic.Bool
	on.Store(true)
	c.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !on.Load() {
			return nil, nil, false
		}
		preq := req.(*kmsg.ProduceRequest)
		resp := preq.ResponseKind().(*kmsg.ProduceResponse)
		resp.SetVersion(preq.GetVersion())
		for _, rt := range preq.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() { on.Store(false) }
}

// testutilGauge is a's sluice_spool_drain_blocked for reason.
func testutilGauge(a *Admission, reason string) float64 {
	return testutil.ToFloat64(a.metrics.drainBlocked.WithLabelValues(reason))
}
