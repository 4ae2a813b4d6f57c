package peers

import (
	"log/slog"
	"time"
)

// Option configures a Membership.
type Option interface{ apply(*options) }

type options struct {
	log        *slog.Logger
	metrics    *Metrics
	now        func() time.Time
	id         string
	maxMembers int
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLogger replaces slog.Default(). A nil logger keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithMetrics gives the membership metrics the caller registered (and
// unregisters); by default it keeps unregistered ones.
func WithMetrics(m *Metrics) Option { return optionFunc(func(o *options) { o.metrics = m }) }

// WithClock replaces time.Now for the heartbeats' times and the members'
// expiry (not for the deadlines of Kafka calls).
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithID replaces NewID() as this replica's member id; it must pass
// CheckID.
func WithID(id string) Option { return optionFunc(func(o *options) { o.id = id }) }

// WithMaxMembers replaces DefaultMaxMembers as the most other replicas
// counted; a heartbeat of one more is ignored, logged and counted.
func WithMaxMembers(n int) Option { return optionFunc(func(o *options) { o.maxMembers = n }) }
