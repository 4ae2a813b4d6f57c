package consumer

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/promreg"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// metrics are the consumer's collectors, registered as one unit.
type metrics struct {
	lag         *prometheus.GaugeVec
	inFlight    prometheus.Gauge
	sinkLatency *prometheus.HistogramVec
	sinkErrors  *prometheus.CounterVec
	circuit     *prometheus.GaugeVec
	mode        *prometheus.GaugeVec
	deadLetters *prometheus.CounterVec
	retries     *prometheus.CounterVec
	committed   *prometheus.GaugeVec
	events      *prometheus.CounterVec
	// dlqBacklog counts, by source, the DLQ records a drain pass has
	// read and not finished.
	dlqBacklog *prometheus.GaugeVec

	// sinkConflicts counts events whose identity the sink held with
	// another payload.
	sinkConflicts *prometheus.CounterVec
	// drainRefused counts the drained records parked unwritten.
	drainRefused *prometheus.CounterVec
	// drained counts the records of drain passes finished, by outcome:
	// what leaves the DLQ, against deadLetters{kind="dlq"}, what enters it.
	drained *prometheus.CounterVec
	// endToEnd is the time from an event's ingested_at to the sink write
	// that made it durable.
	endToEnd *prometheus.HistogramVec
	// bySchema counts records by the schema version they were read with.
	bySchema *schemaSeries
	// auditErrors counts the audit rows given up, by action;
	// auditFallbacks those recorded in record.AuditTopic because the
	// sink's audit table did not take them.
	auditErrors, auditFallbacks *prometheus.CounterVec
}

// Outcomes of a finished record, the outcome label of
// sluice_consumer_events_total and sluice_consumer_dlq_drained_total.
const (
	outcomeWritten = "written"
	outcomeDLQ     = "dlq"
	outcomeParked  = "parked"
	outcomeSkipped = "skipped"
)

// Routes of sluice_consumer_end_to_end_seconds: a record of a source topic,
// or one drained from its DLQ (whose ingested_at is as old as its failures).
const (
	routeDirect = "direct"
	routeDLQ    = "dlq"
)

// Values of the decoded_with label of sluice_consumer_events_by_schema_total,
// and its fingerprint label for a version not kept.
const (
	// decodedOwn: the record's version is kept and decoded it.
	decodedOwn = "own"
	// decodedNewest: the record's version is not kept; the newest read it
	// without loss.
	decodedNewest = "newest"
	// decodedNone: the newest could not read it; it was dead-lettered as
	// record.ClassSchema.
	decodedNone        = "none"
	fingerprintUnknown = "unknown"
)

// endToEndBuckets resolve a p95 around the 2-minute objective and reach 10
// minutes; past them the +Inf bucket says "later than 10 minutes".
var endToEndBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 75, 90, 105, 120, 150, 180, 240, 300, 450, 600}

func newMetrics() *metrics {
	return &metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_lag",
			Help: "Records between the committed offset and the end of each assigned partition.",
		}, []string{"topic", "partition"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_consumer_in_flight",
			Help: "Records polled and not yet finished.",
		}),
		sinkLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_sink_write_seconds",
			Help:    "Duration of Sink.Write calls.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"sink"}),
		sinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sink_errors_total",
			Help: "Failed Sink.Write calls by error class.",
		}, []string{"sink", "class"}),
		circuit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_sink_circuit_state",
			Help: "Circuit breaker state of each sink: 0 closed, 1 open, 2 half_open.",
		}, []string{"sink"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_mode",
			Help: "1 for the consumer's current mode, 0 for the others.",
		}, []string{"mode"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_dead_letters_total",
			Help: "Records produced to DLQ (kind=dlq) and parked (kind=parked) topics.",
		}, []string{"topic", "kind", "class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_retries_total",
			Help: "In-process retries of transient sink failures.",
		}, []string{"sink"}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_committed_offset",
			Help: "Last offset committed for each partition.",
		}, []string{"topic", "partition"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_events_total",
			Help: "Records finished, by outcome: written, dlq, parked, skipped.",
		}, []string{"outcome"}),
		dlqBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_consumer_dlq_backlog",
			Help: "DLQ records the drain pass in progress has read and not finished (waiting for the drain rate, deferred behind the source's read-ahead, or being written), by source: a configured source, or other. 0 between passes; sluice_consumer_lag of the DLQ partitions counts every source.",
		}, []string{"source"}),
		sinkConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sink_conflicts_total",
			Help: "Events whose identity (source, id) the sink held with another payload: the first kept, the copy recorded.",
		}, []string{"sink", "source"}),
		drainRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_drain_refused_total",
			Help: "Drained DLQ records parked instead of written, by reason: source_mismatch, contract.",
		}, []string{"topic", "reason"}),
		drained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_dlq_drained_total",
			Help: "DLQ records finished by drain passes, by outcome: written, dlq (failed again, back to the DLQ), parked, skipped (not retryable, left in the DLQ).",
		}, []string{"outcome"}),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_consumer_end_to_end_seconds",
			Help:    "Time from an event's ingested_at header to the sink write that made it durable, by route: direct (from its topic) or dlq (drained from the DLQ).",
			Buckets: endToEndBuckets,
		}, []string{"route"}),
		bySchema: &schemaSeries{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_events_by_schema_total",
			Help: "Records decoded, by type, schema fingerprint (the record's when its version is kept, else unknown) and the version decoded with: own, newest (its version not kept, read by the newest without loss) or none (unreadable by the newest: dead-lettered as class schema).",
		}, []string{"type", "fingerprint", "decoded_with"})},
		auditErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_audit_errors_total",
			Help: "Audit rows not recorded, by action: refused by the audit store, or still failing when the retries were spent or the record's partition was abandoned, and, for a sink's audit table, not taken by sluice.audit either. The decisions stand; their rows are missing.",
		}, []string{"action"}),
		auditFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_consumer_audit_fallbacks_total",
			Help: "Audit rows the sink's audit table did not take (down past the retries, or refusing them) and that were recorded in sluice.audit instead, by action. sluice trace reads both.",
		}, []string{"action"}),
	}
}

// initLabels creates the series whose label values are known from the
// config and the versions kept at zero, so a fresh consumer's scrape names
// them and rate() sees their first increase.
func (m *metrics) initLabels(sinkName string, sources []string, versions *contract.Versions) {
	m.bySchema.versions = versions
	m.bySchema.sync()
	for _, o := range []string{outcomeWritten, outcomeDLQ, outcomeParked, outcomeSkipped} {
		m.events.WithLabelValues(o)
		m.drained.WithLabelValues(o)
	}
	for _, r := range []string{routeDirect, routeDLQ} {
		m.endToEnd.WithLabelValues(r)
	}
	// The consumer's decisions: replays are an operator's.
	for _, a := range []audit.Action{audit.Written, audit.DeadLettered, audit.Retried, audit.Parked} {
		m.auditErrors.WithLabelValues(string(a))
		m.auditFallbacks.WithLabelValues(string(a))
	}
	m.sinkLatency.WithLabelValues(sinkName)
	m.retries.WithLabelValues(sinkName)
	classes := []string{sink.Transient.String(), sink.Permanent.String()}
	for _, class := range classes {
		m.sinkErrors.WithLabelValues(sinkName, class)
	}
	classes = append(classes, record.ClassDecode, record.ClassSchema)
	for _, t := range sources {
		for _, class := range classes {
			m.deadLetters.WithLabelValues(record.DLQTopic(t), outcomeDLQ, class)
			m.deadLetters.WithLabelValues(record.ParkedTopic(t), outcomeParked, class)
		}
		for _, reason := range []string{record.ParkedSourceMismatch, record.ParkedContract} {
			m.drainRefused.WithLabelValues(record.DLQTopic(t), reason)
		}
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lag, m.inFlight, m.sinkLatency, m.sinkErrors, m.circuit, m.mode,
		m.deadLetters, m.retries, m.committed, m.events, m.dlqBacklog, m.sinkConflicts, m.drainRefused, m.drained, m.endToEnd, m.bySchema.vec,
		m.auditErrors, m.auditFallbacks}
}

// register registers the consumer's collectors and more, those of its
// parts, as one unit.
func (m *metrics) register(r prometheus.Registerer, more ...prometheus.Collector) error {
	return promreg.Register(r, append(m.collectors(), more...)...)
}

func (m *metrics) unregister(r prometheus.Registerer, more ...prometheus.Collector) {
	promreg.Unregister(r, append(m.collectors(), more...)...)
}

// schemaSeries is sluice_consumer_events_by_schema_total, its series kept
// to the versions kept: types × (versions kept + 2) series, the kept
// fingerprints' own and each type's unknown newest and none. The series of
// a version exist at zero from when it is seen kept. When a record is
// counted and the registry served is not the one last seen, a reload
// happened: the series of every fingerprint that left the history are
// deleted and those of the new versions created. A record decoded with a
// version dropped while it was decoded is counted; its series goes at the
// next change.
type schemaSeries struct {
	vec      *prometheus.CounterVec
	versions *contract.Versions

	mu sync.Mutex
	// served is the registry whose history the series follow.
	served *contract.Registry
	// own holds, by type, the fingerprints that have a series.
	own map[string]map[string]bool
}

// decoded counts a record of typ decoded with its own version, whose
// fingerprint is fingerprint, when kept, else with the newest.
func (s *schemaSeries) decoded(typ, fingerprint string, kept bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLocked()
	if !kept {
		s.vec.WithLabelValues(typ, fingerprintUnknown, decodedNewest).Inc()
		return
	}
	if !s.own[typ][fingerprint] {
		s.addLocked(typ, fingerprint)
	}
	s.vec.WithLabelValues(typ, fingerprint, decodedOwn).Inc()
}

// unread counts a record of typ that no version kept could read.
func (s *schemaSeries) unread(typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLocked()
	s.vec.WithLabelValues(typ, fingerprintUnknown, decodedNone).Inc()
}

// sync brings the series to the versions kept now.
func (s *schemaSeries) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLocked()
}

func (s *schemaSeries) syncLocked() {
	// The registry is read before the history: a swap in between leaves
	// served behind, and the next count syncs again.
	r := s.versions.Registry()
	if r == s.served {
		return
	}
	s.served = r
	if s.own == nil {
		s.own = make(map[string]map[string]bool)
	}
	types := make(map[string]bool, len(s.own))
	for _, typ := range r.Types() {
		types[typ] = true
	}
	for typ := range s.own {
		types[typ] = true
	}
	for typ := range types {
		kept := make(map[string]bool)
		for _, c := range s.versions.History(typ) {
			kept[c.Fingerprint()] = true
			if !s.own[typ][c.Fingerprint()] {
				s.addLocked(typ, c.Fingerprint())
			}
		}
		for fp := range s.own[typ] {
			if !kept[fp] {
				s.vec.DeleteLabelValues(typ, fp, decodedOwn)
				delete(s.own[typ], fp)
			}
		}
		s.vec.WithLabelValues(typ, fingerprintUnknown, decodedNewest)
		s.vec.WithLabelValues(typ, fingerprintUnknown, decodedNone)
	}
}

// addLocked creates the own series of fingerprint, a version of typ.
func (s *schemaSeries) addLocked(typ, fingerprint string) {
	if s.own[typ] == nil {
		s.own[typ] = make(map[string]bool)
	}
	s.own[typ][fingerprint] = true
	s.vec.WithLabelValues(typ, fingerprint, decodedOwn)
}
