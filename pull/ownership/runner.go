package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/pull"
)

// Config is the Kafka side of the pollers: the consumer group that picks
// one owner per poller and the compacted topic holding the cursors. The
// connection is the runner's conn.
type Config struct {
	// Group is the consumer group of the replicas. Default "sluice-pollers".
	Group string `yaml:"group"`
	// Topic holds one partition per poller. Default "sluice.pollers".
	Topic string `yaml:"topic"`
	// ReplicationFactor of the topic when it is created; -1 is the
	// broker's default. Default -1.
	ReplicationFactor int16 `yaml:"replication_factor"`
	// SessionTimeout is how long a silent replica keeps its pollers.
	// Default 10s.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// RebalanceTimeout bounds a rebalance, including stopping the pollers
	// being moved. Default 60s.
	RebalanceTimeout time.Duration `yaml:"rebalance_timeout"`
	// IOTimeout bounds creating the topic, loading a cursor and saving one.
	// Default 15s.
	IOTimeout time.Duration `yaml:"io_timeout"`
}

// NewDefaultConfig returns the defaults documented on Config.
func NewDefaultConfig() Config {
	return Config{
		Group:             "sluice-pollers",
		Topic:             "sluice.pollers",
		ReplicationFactor: -1,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  60 * time.Second,
		IOTimeout:         15 * time.Second,
	}
}

// Validate reports the first wrong field.
func (c Config) Validate() error {
	bad := func(field, reason string) error {
		return &pull.ConfigError{Field: "ownership." + field, Reason: reason}
	}
	switch {
	case c.Group == "":
		return bad("group", "must be set")
	case c.Topic == "":
		return bad("topic", "must be set")
	case c.ReplicationFactor == 0 || c.ReplicationFactor < -1:
		return bad("replication_factor", "must be -1 (broker default) or >= 1")
	case c.SessionTimeout <= 0:
		return bad("session_timeout", "must be > 0")
	case c.RebalanceTimeout < c.SessionTimeout:
		return bad("rebalance_timeout", "must be >= session_timeout")
	case c.IOTimeout <= 0:
		return bad("io_timeout", "must be > 0")
	}
	return nil
}

// TopicMismatchError is a cursor topic whose partition count is not the
// number of pollers: poller i ↔ partition i would no longer hold.
type TopicMismatchError struct {
	Topic      string
	Partitions int
	Pollers    int
}

func (e *TopicMismatchError) Error() string {
	return fmt.Sprintf("ownership: topic %s has %d partitions but %d pollers are configured: poller i owns partition i, "+
		"so the counts must match (add partitions to the topic, or create it anew with the pollers' cursors)",
		e.Topic, e.Partitions, e.Pollers)
}

// Runner runs the pollers this replica owns: it joins the consumer group
// over the cursor topic and runs poller i while it is assigned partition i.
type Runner struct {
	cfg     Config
	conn    []kgo.Opt     // the connection of every client of the runner
	pollers []pull.Config // sorted by name: index i is partition i
	ing     pull.Ingester
	opts    []pull.Option // every poller's
	log     *slog.Logger
	metrics *pull.Metrics
	ownMet  bool // metrics registered by the runner, unregistered by Close

	client *kgo.Client
	ctx    context.Context // parent of the pollers; ends at Close
	cancel context.CancelFunc

	mu      sync.Mutex
	running map[int32]*ownedPoller
	last    map[string]pull.Status // pollers that stopped here, for Status
	closing bool                   // Close was called
	closed  bool                   // the group is left: no poller starts any more
}

type ownedPoller struct {
	poller *pull.Poller
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRunner validates the configs. conn carries the Kafka connection (seed
// brokers, TLS, SASL: kafkaconn.Config.Options); the runner adds the
// group, topic and producer settings. Pollers' names must be unique.
func NewRunner(oc Config, conn []kgo.Opt, pollers []pull.Config, ing pull.Ingester, opts ...Option) (*Runner, error) {
	if err := oc.Validate(); err != nil {
		return nil, err
	}
	if len(conn) == 0 {
		return nil, &pull.ConfigError{Field: "ownership.kafka", Reason: "no connection options (seed brokers)"}
	}
	if len(pollers) == 0 {
		return nil, &pull.ConfigError{Field: "pollers", Reason: "no pollers to run"}
	}
	sorted := slices.Clone(pollers)
	slices.SortFunc(sorted, func(a, b pull.Config) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for i, c := range sorted {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Name == c.Name {
			return nil, &pull.ConfigError{Poller: c.Name, Field: "name", Reason: "used by two pollers"}
		}
	}
	o := options{log: slog.Default()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	r := &Runner{cfg: oc, conn: slices.Clone(conn), pollers: sorted, ing: ing, log: o.log, running: map[int32]*ownedPoller{}, last: map[string]pull.Status{}}
	r.metrics = o.metrics
	if r.metrics == nil {
		m, err := pull.NewMetrics(o.reg)
		if err != nil {
			return nil, fmt.Errorf("ownership: register metrics: %w", err)
		}
		r.metrics, r.ownMet = m, true
	}
	// Every poller this replica may run has its series from the start.
	for _, c := range sorted {
		r.metrics.Configured(c)
	}
	r.opts = append(append([]pull.Option{pull.WithLogger(o.log)}, o.poller...), pull.WithMetrics(r.metrics))
	return r, nil
}

// Start makes sure the cursor topic exists with one partition per poller
// and joins the group; pollers start as partitions are assigned. A topic
// with another partition count is a *TopicMismatchError.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.ensureTopic(ctx); err != nil {
		return err
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	cl, err := kgo.NewClient(append(slices.Clone(r.conn),
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.ConsumeTopics(r.cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(r.cfg.SessionTimeout),
		kgo.RebalanceTimeout(r.cfg.RebalanceTimeout),
		kgo.OnPartitionsAssigned(r.assigned),
		kgo.OnPartitionsRevoked(r.revoked),
		kgo.OnPartitionsLost(r.revoked),
		// Cursors go to the partition of their poller; the producer is
		// idempotent with acks=all (franz-go's defaults, stated).
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(r.cfg.IOTimeout),
	)...)
	if err != nil {
		r.cancel()
		return fmt.Errorf("ownership: kafka client: %w", err)
	}
	// Membership only: records are read by Load, never by the group.
	cl.PauseFetchTopics(r.cfg.Topic)
	r.mu.Lock()
	r.client = cl
	r.mu.Unlock()
	return nil
}

// ensureTopic creates the cursor topic, compacted, or checks its partition
// count.
func (r *Runner) ensureTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(r.conn...)
	if err != nil {
		return fmt.Errorf("ownership: kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.IOTimeout)
	defer cancel()
	created := false
	for attempt := 0; ; attempt++ {
		details, err := adm.ListTopics(ctx, r.cfg.Topic)
		if err != nil {
			return fmt.Errorf("ownership: list topic %s: %w", r.cfg.Topic, err)
		}
		d, ok := details[r.cfg.Topic]
		if ok && d.Err == nil {
			if n := len(d.Partitions); n != len(r.pollers) {
				return &TopicMismatchError{Topic: r.cfg.Topic, Partitions: n, Pollers: len(r.pollers)}
			}
			return nil
		}
		if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("ownership: topic %s: %w", r.cfg.Topic, d.Err)
		}
		if created {
			// Another replica created it a moment ago; metadata lags.
			if attempt > 10 {
				return fmt.Errorf("ownership: topic %s exists but is not listed", r.cfg.Topic)
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("ownership: topic %s: %w", r.cfg.Topic, ctx.Err())
			}
			continue
		}
		compact, dirty, segment := "compact", "0.1", "3600000"
		resp, err := adm.CreateTopic(ctx, int32(len(r.pollers)), r.cfg.ReplicationFactor, map[string]*string{
			"cleanup.policy":            &compact,
			"min.cleanable.dirty.ratio": &dirty,
			"segment.ms":                &segment,
		}, r.cfg.Topic)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			r.log.Info("created the pollers' cursor topic", "topic", r.cfg.Topic, "partitions", len(r.pollers))
			return nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			created = true
		default:
			return fmt.Errorf("ownership: create topic %s: %w", r.cfg.Topic, err)
		}
	}
}

func (r *Runner) assigned(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, part := range parts[r.cfg.Topic] {
		if _, ok := r.running[part]; ok {
			continue
		}
		if int(part) >= len(r.pollers) {
			r.log.Error("assigned a partition with no poller", "partition", part)
			continue
		}
		cfg := r.pollers[part]
		store := &kafkaStore{client: cl, conn: r.conn, topic: r.cfg.Topic, partition: part,
			poller: cfg.Name, timeout: r.cfg.IOTimeout, log: r.log}
		p, err := pull.NewPoller(cfg, r.ing, store, r.opts...)
		if err != nil { // validated in NewRunner
			r.log.Error("poller not started", "poller", cfg.Name, "err", err)
			continue
		}
		ctx, cancel := context.WithCancel(r.ctx)
		op := &ownedPoller{poller: p, cancel: cancel, done: make(chan struct{})}
		r.running[part] = op
		r.log.Info("poller owned by this replica", "poller", cfg.Name, "partition", part)
		go func() {
			defer close(op.done)
			_ = p.Run(ctx) // an *pull.AuthError is logged and in Status
		}()
	}
}

// revoked stops the pollers of the partitions and waits for them, so that
// the next owner starts only after this one stopped saving.
func (r *Runner) revoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	r.stop(parts[r.cfg.Topic])
}

func (r *Runner) stop(parts []int32) {
	r.mu.Lock()
	var stopping []*ownedPoller
	for _, part := range parts {
		if op, ok := r.running[part]; ok {
			op.cancel()
			stopping = append(stopping, op)
			delete(r.running, part)
		}
	}
	r.mu.Unlock()
	for _, op := range stopping {
		<-op.done
		st := op.poller.Status()
		r.mu.Lock()
		r.last[st.Partner] = st
		r.mu.Unlock()
		r.log.Info("poller released by this replica", "poller", st.Partner)
	}
}

// Close leaves the group, stops every poller, waits for them and
// unregisters the metrics the runner registered. Calling it again does
// nothing.
func (r *Runner) Close() {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return
	}
	r.closing = true
	cl := r.client
	r.mu.Unlock()
	if cl != nil {
		// Leaving revokes every partition, which stops the pollers; no
		// callback runs after Close returns.
		cl.Close()
	}
	r.mu.Lock()
	r.closed = true
	var parts []int32
	for part := range r.running {
		parts = append(parts, part)
	}
	r.mu.Unlock()
	r.stop(parts)
	if r.cancel != nil {
		r.cancel()
	}
	if r.ownMet {
		r.metrics.Unregister()
	}
}

// Status returns the pollers running here, then those that stopped here,
// by name.
func (r *Runner) Status() []pull.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []pull.Status
	seen := map[string]bool{}
	for _, op := range r.running {
		st := op.poller.Status()
		out = append(out, st)
		seen[st.Partner] = true
	}
	for name, st := range r.last {
		if !seen[name] {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b pull.Status) int {
		switch {
		case a.Partner < b.Partner:
			return -1
		case a.Partner > b.Partner:
			return 1
		}
		return 0
	})
	return out
}

// kafkaStore keeps one poller's cursor in its partition of the cursor
// topic: key the poller's name, value a pull.CursorRecord as JSON.
type kafkaStore struct {
	client    *kgo.Client // the group's client, producing
	conn      []kgo.Opt   // the connection, for Load's own client
	topic     string
	partition int32
	poller    string
	timeout   time.Duration
	log       *slog.Logger
}

// Save produces the record to the poller's partition; nil once Kafka
// acknowledged it with acks=all.
func (s *kafkaStore) Save(ctx context.Context, rec pull.CursorRecord) error {
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r := &kgo.Record{Topic: s.topic, Partition: s.partition, Key: []byte(s.poller), Value: value}
	if err := s.client.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("ownership: save cursor of %s: %w", s.poller, err)
	}
	return nil
}

// Load reads the partition's last record: the latest cursor, since the
// partition holds only this poller's records and compaction keeps the
// last record of a key. A last record of another poller (the poller list
// was renamed) is ignored with a warning: that poller starts afresh.
func (s *kafkaStore) Load(ctx context.Context) (pull.CursorRecord, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cl, err := kgo.NewClient(s.conn...)
	if err != nil {
		return pull.CursorRecord{}, false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, s.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return pull.CursorRecord{}, false, fmt.Errorf("ownership: end offset of %s[%d]: %w", s.topic, s.partition, err)
	}
	end, ok := ends.Lookup(s.topic, s.partition)
	if !ok {
		return pull.CursorRecord{}, false, fmt.Errorf("ownership: %s has no partition %d", s.topic, s.partition)
	}
	starts, err := adm.ListStartOffsets(ctx, s.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return pull.CursorRecord{}, false, fmt.Errorf("ownership: start offset of %s[%d]: %w", s.topic, s.partition, err)
	}
	start, _ := starts.Lookup(s.topic, s.partition)
	if end.Offset <= start.Offset {
		return pull.CursorRecord{}, false, nil
	}
	var last *kgo.Record
	span := kafkaconn.Span{Topic: s.topic, Partition: s.partition, From: end.Offset - 1, End: end.Offset}
	err = kafkaconn.Read(ctx, cl, []kafkaconn.Span{span}, 0, func(r *kgo.Record) (bool, error) {
		last = r
		return false, nil
	})
	if fe, ok := err.(*kafkaconn.FetchError); ok {
		err = fe.Err
	}
	if err == nil && last == nil {
		err = fmt.Errorf("no record at %s[%d]@%d", s.topic, s.partition, end.Offset-1)
	}
	if err != nil {
		return pull.CursorRecord{}, false, fmt.Errorf("ownership: read cursor of %s: %w", s.poller, err)
	}
	if string(last.Key) != s.poller {
		s.log.Warn("the cursor partition's last record is another poller's: starting afresh",
			"poller", s.poller, "partition", s.partition, "record_key", string(last.Key))
		return pull.CursorRecord{}, false, nil
	}
	var rec pull.CursorRecord
	if err := json.Unmarshal(last.Value, &rec); err != nil {
		return pull.CursorRecord{}, false, fmt.Errorf("ownership: cursor record %s[%d]@%d: %w", s.topic, s.partition, last.Offset, err)
	}
	return rec, true, nil
}
