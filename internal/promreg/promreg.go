package promreg

import "github.com/prometheus/client_golang/prometheus"

// Register registers every collector, or, when one fails, unregisters those
// it had registered and returns that error.
func Register(r prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// Unregister unregisters every collector.
func Unregister(r prometheus.Registerer, cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Unregister(c)
	}
}
