package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxBufferedHeartbeats bounds the heartbeats waiting for Kafka: past it a
// heartbeat is not queued but counted as a write error (Kafka is away and
// the ones queued say the same thing).
const maxBufferedHeartbeats = 8

// pollRecords bounds the records one read takes from the topic.
const pollRecords = 1024

// Membership counts the gateway replicas alive through the heartbeat
// topic, and calls its onChange with the count whenever it changes.
type Membership struct {
	cfg      Config
	conn     []kgo.Opt
	onChange func(n int)
	log      *slog.Logger
	metrics  *Metrics
	now      func() time.Time
	id       string

	client *kgo.Client
	table  *table // owned by Start, then by run
	// capLogged: a heartbeat over the cap was logged; the next ones are
	// only counted. Owned with table.
	capLogged bool
	cancel    context.CancelFunc
	done      chan struct{} // closed when run returns

	mu       sync.Mutex
	status   Status
	stopOnce sync.Once
}

// Status is what a Membership last counted.
type Status struct {
	// Replicas alive, this one included (onChange's last n).
	Replicas int
	// SelfSeen is the time, by the membership's clock, of the last of
	// its own heartbeats it read back; zero before the first.
	SelfSeen time.Time
}

// New checks cfg, which must have a heartbeat topic. conn carries the Kafka
// connection (seed brokers, TLS, SASL: kafkaconn's options); the
// membership adds its topic and producer settings. onChange is called with
// the count (at least 1) once by Start and then from the membership's own
// goroutine each time the count changes; it must return promptly.
func New(cfg Config, conn []kgo.Opt, onChange func(n int), opts ...Option) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, &ConfigError{Field: "heartbeat_topic", Reason: "must be set for replicas to coordinate"}
	}
	if len(conn) == 0 {
		return nil, &ConfigError{Field: "kafka", Reason: "no connection options (seed brokers)"}
	}
	if onChange == nil {
		onChange = func(int) {}
	}
	o := options{log: slog.Default(), now: time.Now, maxMembers: DefaultMaxMembers}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.id == "" {
		o.id = NewID()
	}
	if err := CheckID(o.id); err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	if o.maxMembers < 1 {
		return nil, fmt.Errorf("peers: max members %d: must be at least 1", o.maxMembers)
	}
	if o.metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		o.metrics = m
	}
	return &Membership{
		cfg: cfg, conn: slices.Clone(conn), onChange: onChange,
		log: o.log.With("member", o.id), metrics: o.metrics, now: o.now, id: o.id,
		table:  newTable(o.id, cfg.MemberTTL, o.maxMembers),
		status: Status{Replicas: 1},
	}, nil
}

// ID is this replica's member id, the key of its heartbeats.
func (m *Membership) ID() string { return m.id }

// Status is what the membership last counted.
func (m *Membership) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// Start creates the heartbeat topic when it is missing, writes this
// replica's first heartbeat and reads the topic until it reads that
// heartbeat back (so it has read every member that wrote before it), each
// step within IOTimeout, then calls onChange with the count and keeps
// counting in a goroutine of its own until Close. A Kafka that does not
// answer in time does not stop the start: the replica counts itself alone
// until it reads its heartbeats back. Only a failure to build the client,
// or a topic Kafka refuses to create, is returned.
func (m *Membership) Start(ctx context.Context) error {
	if err := m.ensureTopic(ctx); err != nil {
		return err
	}
	wait := min(m.cfg.HeartbeatInterval, time.Second)
	cl, err := kgo.NewClient(append(slices.Clone(m.conn),
		kgo.ConsumeTopics(m.cfg.HeartbeatTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(wait),
		kgo.DefaultProduceTopic(m.cfg.HeartbeatTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(m.cfg.IOTimeout),
		kgo.MaxBufferedRecords(maxBufferedHeartbeats),
	)...)
	if err != nil {
		return fmt.Errorf("peers: kafka client: %w", err)
	}
	m.client = cl

	sctx, cancel := context.WithTimeout(ctx, m.cfg.IOTimeout)
	defer cancel()
	first := m.heartbeat()
	if err := cl.ProduceSync(sctx, first).FirstErr(); err != nil {
		m.metrics.writes.Inc()
		m.log.Warn("first heartbeat not written: counting this replica alone until its heartbeats are read back", "topic", m.cfg.HeartbeatTopic, "err", err)
	} else {
		for sctx.Err() == nil && m.table.selfSeen.IsZero() {
			m.read(cl.PollRecords(sctx, pollRecords))
		}
		if m.table.selfSeen.IsZero() {
			m.log.Warn("own heartbeat not read back at start: counting the replicas seen so far", "topic", m.cfg.HeartbeatTopic, "waited", m.cfg.IOTimeout)
		}
	}
	n := m.table.count()
	m.publish(n, m.table.selfSeen)
	m.log.Info("replicas counted at start", "replicas", n, "topic", m.cfg.HeartbeatTopic)
	m.onChange(n)

	rctx, rcancel := context.WithCancel(context.Background())
	m.cancel, m.done = rcancel, make(chan struct{})
	go m.run(rctx, m.now().Add(m.cfg.HeartbeatInterval))
	return nil
}

// heartbeat is this replica's heartbeat record now.
func (m *Membership) heartbeat() *kgo.Record {
	return &kgo.Record{Key: []byte(m.id), Value: Heartbeat{ID: m.id, Time: m.now()}.Encode()}
}

// run writes a heartbeat every HeartbeatInterval, reads the others', and
// expires the silent ones, until ctx ends. Each read waits at most half an
// interval, so a silent member is dropped within MemberTTL + the interval.
func (m *Membership) run(ctx context.Context, nextBeat time.Time) {
	defer close(m.done)
	n := m.table.count()
	blind := false
	for {
		pctx, cancel := context.WithTimeout(ctx, m.cfg.HeartbeatInterval/2)
		fetches := m.client.PollRecords(pctx, pollRecords)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.read(fetches)
		now := m.now()
		if !now.Before(nextBeat) {
			nextBeat = now.Add(m.cfg.HeartbeatInterval)
			m.client.TryProduce(ctx, m.heartbeat(), func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, context.Canceled) {
					m.metrics.writes.Inc()
					m.log.Debug("heartbeat not written", "err", err)
				}
			})
		}
		m.table.expire(now)
		if b := m.table.blind(now); b != blind {
			blind = b
			if b {
				m.log.Warn("own heartbeats not read back within member_ttl: keeping the count of replicas until they are", "replicas", n, "member_ttl", m.cfg.MemberTTL)
			} else {
				m.log.Info("own heartbeats read back again", "replicas", m.table.count())
			}
		}
		next := m.table.count()
		m.publish(next, m.table.selfSeen)
		if next != n {
			m.log.Info("replicas changed", "from", n, "to", next)
			n = next
			m.onChange(n)
		}
	}
}

// read takes the heartbeats and tombstones of fetches into the table.
func (m *Membership) read(fetches kgo.Fetches) {
	now := m.now()
	fetches.EachError(func(topic string, part int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			m.log.Debug("heartbeat topic read", "topic", topic, "partition", part, "err", err)
		}
	})
	fetches.EachRecord(func(r *kgo.Record) {
		h, leave, err := DecodeHeartbeat(r.Key, r.Value)
		switch {
		case err != nil:
			m.metrics.ignored.WithLabelValues(ignoredMalformed).Inc()
			m.log.Debug("heartbeat ignored", "offset", r.Offset, "err", err)
		case leave:
			if h.ID != m.id {
				m.table.leave(h.ID)
			}
		default:
			if why := m.table.beat(h, now); why != "" {
				m.metrics.ignored.WithLabelValues(why).Inc()
				if why == ignoredOverCap && !m.capLogged {
					m.capLogged = true
					m.log.Warn("heartbeat of one more replica than counted at most: ignored, as are the next ones (counted in sluice_gateway_heartbeats_ignored_total)",
						"replica", h.ID, "max", m.table.max)
				}
			}
		}
	})
}

func (m *Membership) publish(n int, selfSeen time.Time) {
	m.metrics.Replicas.Set(float64(n))
	m.mu.Lock()
	m.status = Status{Replicas: n, SelfSeen: selfSeen}
	m.mu.Unlock()
}

// Close stops counting and writes this replica's tombstone (within
// IOTimeout), so that the others stop counting it at once. Calling it
// again does nothing.
func (m *Membership) Close() { m.stop(true) }

// stop stops the goroutine and the client; with farewell, it writes the
// tombstone first. stop(false) is what a crash looks like to the others.
func (m *Membership) stop(farewell bool) {
	m.stopOnce.Do(func() {
		if m.client == nil {
			return
		}
		if m.cancel != nil {
			m.cancel()
			<-m.done
		}
		if farewell {
			ctx, cancel := context.WithTimeout(context.Background(), m.cfg.IOTimeout)
			err := m.client.ProduceSync(ctx, &kgo.Record{Key: []byte(m.id)}).FirstErr()
			cancel()
			if err != nil {
				m.log.Warn("farewell not written: the others drop this replica within member_ttl", "err", err)
			}
		}
		m.client.Close()
	})
}

// ensureTopic creates the heartbeat topic when it is missing: one
// partition, compacted (a member's last heartbeat, or its tombstone, is
// what a starting replica needs) and with delete too, so that the
// heartbeats of replicas long gone leave the topic after an hour.
func (m *Membership) ensureTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(m.conn...)
	if err != nil {
		return fmt.Errorf("peers: kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.IOTimeout)
	defer cancel()
	topic := m.cfg.HeartbeatTopic
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		m.log.Warn("heartbeat topic not checked: Kafka did not answer", "topic", topic, "err", err)
		return nil
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		return nil
	} else if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("peers: topic %s: %w", topic, d.Err)
	}
	policy, dirty, segment, retention := "compact,delete", "0.1", "600000", "3600000"
	resp, err := adm.CreateTopic(ctx, 1, m.cfg.ReplicationFactor, map[string]*string{
		"cleanup.policy":            &policy,
		"min.cleanable.dirty.ratio": &dirty,
		"segment.ms":                &segment,
		"retention.ms":              &retention,
	}, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		m.log.Info("created the heartbeat topic", "topic", topic)
	case errors.Is(err, kerr.TopicAlreadyExists): // another replica, a moment ago
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		m.log.Warn("heartbeat topic not created: Kafka did not answer", "topic", topic, "err", err)
	default:
		return fmt.Errorf("peers: create topic %s: %w", topic, err)
	}
	return nil
}
