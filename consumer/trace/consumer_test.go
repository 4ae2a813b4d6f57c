package trace

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/sink"
)

// refusingSink refuses the events of one id for good and takes the rest.
type refusingSink struct {
	refuse string
	mu     sync.Mutex
	wrote  []string
}

func (s *refusingSink) Name() string { return "refusing" }
func (s *refusingSink) Close() error { return nil }
func (s *refusingSink) Write(_ context.Context, batch []sink.Event) ([]sink.Conflict, error) {
	for _, e := range batch {
		if e.ID == s.refuse {
			return nil, sink.PermanentError(errors.New("422 from the receiver"))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range batch {
		s.wrote = append(s.wrote, e.ID)
	}
	return nil, nil
}

// Against the real consumer: an event it dead-letters is IN_DLQ with the
// envelope the consumer wrote, and once the group committed past it, an
// event it wrote is no longer PENDING.
func TestTraceRealConsumer(t *testing.T) {
	f := newFixture(t, 1)
	f.cfg.CommitInterval = 10 * time.Millisecond
	f.cfg.LagInterval = 10 * time.Millisecond
	versions, err := contract.NewVersions(eventtest.Registry(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &refusingSink{refuse: "bad"}
	c, err := consumer.New(f.cfg, versions, s, f.kopts(), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("consumer: %v", err)
		}
	})

	f.produce(event(t, "good", 0), event(t, "bad", 0))
	tr := f.tracer()
	var a *Answer
	waitfor.Condition(t, 30*time.Second, "the refused event in the DLQ", func() bool {
		a = trace(t, tr, Query{Source: source, ID: "bad"})
		return a.Status == InDLQ
	})
	d := a.DeadLetter
	if d.Class != "permanent" || d.Retryable || d.Attempts != 1 || d.Sink != "refusing" || d.Group != group ||
		d.Source == nil || *d.Source != (Position{topic, 0, 1}) || d.Record == nil || d.Record.Topic != dlqTopic {
		t.Errorf("dead letter %+v", d)
	}
	// This sink keeps no audit table: the consumer recorded its decisions
	// in sluice.audit, where the trace reads them.
	waitfor.Condition(t, 30*time.Second, "the dead_lettered row in sluice.audit", func() bool {
		a = trace(t, tr, Query{Source: source, ID: "bad"})
		return len(a.Audit) == 1
	})
	if r := a.Audit[0]; r.Action != string(audit.DeadLettered) || r.Class != "permanent" || r.Sink != "refusing" ||
		r.Group != group || r.Topic != topic || r.Offset != 1 || r.Attempt != 1 || a.Status != InDLQ {
		t.Errorf("status %s, rows %+v", a.Status, a.Audit)
	}
	waitfor.Condition(t, 30*time.Second, "the written event in the sink", func() bool {
		a = trace(t, tr, Query{Source: source, ID: "good", Hint: &Position{topic, 0, 0}})
		return a.Status == InSink
	})
	if a.Written == nil || a.Written.Inferred || a.Written.Sink != "refusing" || len(a.Audit) != 1 ||
		a.Audit[0].Action != string(audit.Written) || a.Path[len(a.Path)-1].From != FromAuditTopic {
		t.Errorf("written %+v, rows %+v, path %+v: %s", a.Written, a.Audit, a.Path, a.Summary)
	}
}
