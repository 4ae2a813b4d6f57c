package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer"
)

// Defaults of Limits.
const (
	DefaultMaxRecords = 100_000
	DefaultTimeout    = 30 * time.Second
)

// maxIdentityBytes bounds a source and an id, as the sinks bound them.
const maxIdentityBytes = 512

// Limits bound one lookup's scans of Kafka topics.
type Limits struct {
	// MaxRecords is the most records one lookup reads, across every topic
	// it scans. Default DefaultMaxRecords.
	MaxRecords int64
	// Timeout bounds the whole lookup. Default DefaultTimeout.
	Timeout time.Duration
}

// Position is a record's place in Kafka.
type Position struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (p Position) String() string { return fmt.Sprintf("%s/%d@%d", p.Topic, p.Partition, p.Offset) }

// Query asks where the event of identity (Source, ID) is.
type Query struct {
	Source, ID string
	// Hint is where the gateway's answer put the event, when the caller
	// has it: the source topic's partition is then read at that offset
	// alone instead of scanned. Its topic must be a source topic.
	Hint *Position
	// Limits lowers or raises the Tracer's limits for this lookup; zero
	// fields keep the Tracer's.
	Limits Limits
}

// QueryError is a query the Tracer refuses: Field names what is wrong
// (source, id, topic, partition, offset, max_records, timeout).
type QueryError struct {
	Field string
	Err   error
}

func (e *QueryError) Error() string { return fmt.Sprintf("trace: %s: %v", e.Field, e.Err) }
func (e *QueryError) Unwrap() error { return e.Err }

// validIdentity is the sinks' rule for a source and an id.
func validIdentity(field, s string) error {
	bad := func(msg string) error { return &QueryError{Field: field, Err: errors.New(msg)} }
	switch {
	case s == "":
		return bad("is empty")
	case len(s) > maxIdentityBytes:
		return bad(fmt.Sprintf("is over %d bytes", maxIdentityBytes))
	case !utf8.ValidString(s):
		return bad("is not UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return bad("holds a control character")
	}
	return nil
}

// Validate checks q against the source topics a lookup may read.
func (q *Query) Validate(sourceTopics []string) error {
	if err := validIdentity("source", q.Source); err != nil {
		return err
	}
	if err := validIdentity("id", q.ID); err != nil {
		return err
	}
	if h := q.Hint; h != nil {
		switch {
		case !slices.Contains(sourceTopics, h.Topic):
			return &QueryError{Field: "topic", Err: fmt.Errorf("%q is not one of the consumer's source topics", h.Topic)}
		case h.Partition < 0:
			return &QueryError{Field: "partition", Err: errors.New("is negative")}
		case h.Offset < 0:
			return &QueryError{Field: "offset", Err: errors.New("is negative")}
		}
	}
	switch {
	case q.Limits.MaxRecords < 0:
		return &QueryError{Field: "max_records", Err: errors.New("is negative")}
	case q.Limits.Timeout < 0:
		return &QueryError{Field: "timeout", Err: errors.New("is negative")}
	}
	return nil
}

// Option configures New.
type Option interface{ apply(*options) }

type options struct {
	reader        audit.Reader
	now           func() time.Time
	limits        Limits
	maxConcurrent int
	log           *slog.Logger
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithAuditReader reads an event's audit rows from r, the sink's audit
// table; by default there is none, and the rows are looked for in
// record.AuditTopic (audit.ParseRecord).
func WithAuditReader(r audit.Reader) Option {
	return optionFunc(func(o *options) { o.reader = r })
}

// WithClock replaces time.Now, which says whether a dead letter is past
// its deadline.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithLimits replaces the default limits (DefaultMaxRecords,
// DefaultTimeout) field by field; they are also the ceiling of what a
// request to the HTTP endpoint may ask.
func WithLimits(l Limits) Option {
	return optionFunc(func(o *options) {
		if l.MaxRecords > 0 {
			o.limits.MaxRecords = l.MaxRecords
		}
		if l.Timeout > 0 {
			o.limits.Timeout = l.Timeout
		}
	})
}

// WithMaxConcurrent bounds the lookups the HTTP endpoint runs at once;
// past it a request is refused BUSY (503). Default 2.
func WithMaxConcurrent(n int) Option {
	return optionFunc(func(o *options) {
		if n > 0 {
			o.maxConcurrent = n
		}
	})
}

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// Tracer answers where events are. It is safe for concurrent use.
type Tracer struct {
	group   string
	sources []string
	dlq     consumer.DLQConfig
	conn    []kgo.Opt
	cl      *kgo.Client
	adm     *kadm.Client
	o       options
	// busy holds a token per lookup the HTTP endpoint runs.
	busy chan struct{}
}

// New returns a Tracer of the consumer tier configured by cfg (its group,
// source topics and DLQ block), over the Kafka connection conn. No
// request is made before the first lookup.
func New(cfg consumer.Config, conn []kgo.Opt, opts ...Option) (*Tracer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	o := options{
		now:           time.Now,
		limits:        Limits{MaxRecords: DefaultMaxRecords, Timeout: DefaultTimeout},
		maxConcurrent: 2,
		log:           slog.Default(),
	}
	for _, opt := range opts {
		opt.apply(&o)
	}
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return nil, fmt.Errorf("trace: kafka client: %w", err)
	}
	return &Tracer{
		group:   cfg.Group,
		sources: cfg.SourceTopics(),
		dlq:     cfg.DLQ,
		conn:    slices.Clip(conn),
		cl:      cl,
		adm:     kadm.NewClient(cl),
		o:       o,
		busy:    make(chan struct{}, o.maxConcurrent),
	}, nil
}

// Close closes the Tracer's Kafka client. Lookups in flight fail.
func (t *Tracer) Close() { t.cl.Close() }

// limitsOf fills q's zero limits with the Tracer's.
func (t *Tracer) limitsOf(q Limits) Limits {
	l := t.o.limits
	if q.MaxRecords > 0 {
		l.MaxRecords = q.MaxRecords
	}
	if q.Timeout > 0 {
		l.Timeout = q.Timeout
	}
	return l
}

// Trace looks for the event of q and says where it is. It returns an
// error for a query Validate refuses (a *QueryError), for an audit table
// that cannot be read, and for Kafka offsets that cannot be listed; a
// scan cut by the limits is no error, the Answer says so.
func (t *Tracer) Trace(ctx context.Context, q Query) (*Answer, error) {
	if err := q.Validate(t.sources); err != nil {
		return nil, err
	}
	lim := t.limitsOf(q.Limits)
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	lk := &lookup{t: t, q: q, lim: lim, a: newAnswer(q, lim)}
	if err := lk.run(ctx); err != nil {
		return nil, err
	}
	lk.finish()
	return lk.a, nil
}
