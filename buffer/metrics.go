package buffer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/promreg"
)

// metrics are the spool's Prometheus metrics. They are always collected;
// they are registered only when WithRegisterer is given.
type metrics struct {
	bytes, segments, records, oldestAge prometheus.GaugeFunc
	// maxBytes is Config.MaxBytes, so that sluice_spool_bytes can be read
	// as a share of the cap.
	maxBytes prometheus.Gauge

	fsyncs          prometheus.Counter
	recordsPerFsync prometheus.Histogram
	appends         *prometheus.CounterVec

	quarantinedRecords, quarantinedBytes prometheus.Counter
	truncatedBytes                       prometheus.Counter
}

// Results of sluice_spool_appends_total.
const (
	resultOK       = "ok"
	resultFull     = "full"
	resultTooLarge = "too_large"
	resultClosed   = "closed"
	resultCanceled = "canceled"
	resultError    = "error"
)

func newMetrics(s *Spool) *metrics {
	gauge := func(name, help string, fn func(Stats) float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return fn(s.Stats()) })
	}
	m := &metrics{
		bytes: gauge("sluice_spool_bytes", "Bytes of all segment files of the spool.",
			func(st Stats) float64 { return float64(st.Bytes) }),
		segments: gauge("sluice_spool_segments", "Segment files of the spool.",
			func(st Stats) float64 { return float64(st.Segments) }),
		records: gauge("sluice_spool_records", "Records in the spool not yet acknowledged by the drainer.",
			func(st Stats) float64 { return float64(st.Records) }),
		oldestAge: gauge("sluice_spool_oldest_record_age_seconds",
			"Age of the oldest record not yet acknowledged by the drainer; 0 when there is none.",
			func(st Stats) float64 {
				if st.OldestAppendedAt.IsZero() {
					return 0
				}
				return max(0, s.clock().Sub(st.OldestAppendedAt).Seconds())
			}),
		maxBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_spool_max_bytes",
			Help: "The spool's cap on the bytes of all segment files (buffer.max_bytes): appends past it fail full.",
		}),
		fsyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_fsyncs_total",
			Help: "fdatasync calls that made appended records durable (one per group-commit batch, one more when a batch starts a segment).",
		}),
		recordsPerFsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_spool_records_per_fsync",
			Help:    "Records made durable by one fdatasync: how well appends are group-committed.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13), // 1 to 4096
		}),
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_spool_appends_total",
			Help: "Append calls by result: ok, full, too_large, closed, canceled or error.",
		}, []string{"result"}),
		quarantinedRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_quarantined_records_total",
			Help: "Records moved out of the spool by recovery because their segment was damaged (a lower bound: each damaged region counts as one).",
		}),
		quarantinedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_quarantined_bytes_total",
			Help: "Bytes moved out of the spool by recovery because their segment was damaged, from the damage to the end of the segment.",
		}),
		truncatedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_spool_truncated_bytes_total",
			Help: "Bytes of torn tails (records never acknowledged to a caller) cut off by recovery.",
		}),
	}
	m.maxBytes.Set(float64(s.cfg.MaxBytes))
	for _, r := range []string{resultOK, resultFull, resultTooLarge, resultClosed, resultCanceled, resultError} {
		m.appends.WithLabelValues(r)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.bytes, m.segments, m.records, m.oldestAge, m.maxBytes,
		m.fsyncs, m.recordsPerFsync, m.appends,
		m.quarantinedRecords, m.quarantinedBytes, m.truncatedBytes,
	}
}

// register registers every collector or none.
func (m *metrics) register(r prometheus.Registerer) error {
	return promreg.Register(r, m.collectors()...)
}

func (m *metrics) unregister(r prometheus.Registerer) { promreg.Unregister(r, m.collectors()...) }
