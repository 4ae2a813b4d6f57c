package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterAllOrNone(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	if err := Register(reg, b); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, a, clash); err == nil {
		t.Fatal("a clashing collector registered")
	}
	// a was rolled back, so it registers again on its own.
	if err := reg.Register(a); err != nil {
		t.Fatalf("a left registered after the failure: %v", err)
	}
	Unregister(reg, a, b)
	if err := Register(reg, a, b); err != nil {
		t.Fatalf("after Unregister: %v", err)
	}
}
