package share

import "testing"

// TestUsedAndFree: Used sums every tenant's holding, borrowed or not, and
// Free is what is left of the capacity; a tenant can be refused while
// Free has room, which is another's guarantee.
func TestUsedAndFree(t *testing.T) {
	p := newPool(t, 100, 0.5, map[string]float64{"a": 1, "b": 1})
	a, b := p.Tenant("a"), p.Tenant("b")
	if !a.TryTake(75) || !b.TryTake(10) {
		t.Fatal("takes within the shares refused")
	}
	if p.Used() != 85 || p.Free() != 15 {
		t.Fatalf("used %d, free %d, want 85 and 15", p.Used(), p.Free())
	}
	if a.TryTake(1) {
		t.Fatal("a took b's guarantee")
	}
	b.Give(10)
	a.Give(75)
	if p.Used() != 0 || p.Free() != 100 {
		t.Fatalf("used %d, free %d after every give, want 0 and 100", p.Used(), p.Free())
	}
}
