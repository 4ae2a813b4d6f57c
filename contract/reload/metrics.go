package reload

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/promreg"
)

// metrics are the Reloader's series.
type metrics struct {
	// info is 1 for each type's served fingerprint, and has no other
	// series: a swap deletes the ones it replaces.
	info     *prometheus.GaugeVec
	reloads  *prometheus.CounterVec
	refused  prometheus.Gauge
	duration prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_contract_info",
			Help: "1 for the schema fingerprint served for each event type.",
		}, []string{"type", "fingerprint"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_contract_reloads_total",
			Help: "Contract reloads by result: reloaded, unchanged, failed (unreadable, does not load, or refused by the service), incompatible (breaks a type's compatibility policy).",
		}, []string{"result"}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_contract_reload_refused",
			Help: "1 while the last reload tried was refused and the running version keeps serving: the descriptor set file holds contracts that are not served.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_contract_reload_duration_seconds",
			Help:    "Time of a successful reload, from loading the new image to the swap.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	for _, res := range []string{ResultReloaded, ResultUnchanged, ResultFailed, ResultIncompatible} {
		m.reloads.WithLabelValues(res)
	}
	if r != nil {
		if err := promreg.Register(r, m.info, m.reloads, m.refused, m.duration); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// serve moves the info series from prev's fingerprints (nil: none) to
// next's.
func (m *metrics) serve(prev, next *contract.Registry) {
	if prev != nil {
		for typ, fp := range servedVersions(prev) {
			m.info.DeleteLabelValues(typ, fp)
		}
	}
	for typ, fp := range servedVersions(next) {
		m.info.WithLabelValues(typ, fp).Set(1)
	}
}
