package share

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func newPool(t *testing.T, capacity int64, reserved float64, weights map[string]float64) *Pool {
	t.Helper()
	p, err := New(capacity, reserved, weights)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOneTenantHoldsEverything: with a single tenant the pool is no limit
// beyond its capacity, whatever is reserved.
func TestOneTenantHoldsEverything(t *testing.T) {
	for _, r := range []float64{0, 0.5, 1} {
		p := newPool(t, 1000, r, map[string]float64{"a": 1})
		a := p.Tenant("a")
		if !a.TryTake(1000) {
			t.Fatalf("reserved %v: the only tenant could not take the whole capacity", r)
		}
		if a.TryTake(1) {
			t.Fatalf("reserved %v: took beyond the capacity", r)
		}
	}
}

// TestGuaranteeSurvivesABorrower: a tenant that borrows all it can leaves
// the other's guarantee whole, and borrowed room comes back on Give.
func TestGuaranteeSurvivesABorrower(t *testing.T) {
	p := newPool(t, 1000, 0.5, map[string]float64{"a": 1, "b": 3})
	a, b := p.Tenant("a"), p.Tenant("b")
	if a.Guarantee() != 125 || b.Guarantee() != 375 || p.Shared() != 500 {
		t.Fatalf("guarantees %d, %d and shared %d, want 125, 375, 500", a.Guarantee(), b.Guarantee(), p.Shared())
	}
	for a.TryTake(5) {
	}
	if got := a.Used(); got != 625 {
		t.Fatalf("a holds %d, want its 125 and the 500 shared", got)
	}
	if !b.TryTake(375) {
		t.Fatal("b could not take its guarantee while a borrowed everything")
	}
	if b.TryTake(1) {
		t.Fatal("b took beyond its guarantee while the remainder is lent out")
	}
	a.Give(300) // from what a borrowed
	if !b.TryTake(300) {
		t.Fatal("b could not borrow what a gave back")
	}
	if b.Limit() != 375+300 {
		t.Fatalf("b's limit %d, want 675", b.Limit())
	}
}

// TestUnknownTenantBorrowsOnly: a name the pool was not built with has no
// guarantee.
func TestUnknownTenantBorrowsOnly(t *testing.T) {
	p := newPool(t, 100, 0.5, map[string]float64{"a": 1})
	x := p.Tenant("x")
	if x.Guarantee() != 0 || !x.TryTake(50) || x.TryTake(1) {
		t.Fatalf("unknown tenant: guarantee %d, holds %d, want 0 and 50", x.Guarantee(), x.Used())
	}
	if p.Tenant("x") != x {
		t.Fatal("a second lookup made another account")
	}
}

// TestTakeWaitsForAGive: Take waits until room is given back, and gives up
// with ctx; a request above what the tenant could ever hold is refused.
func TestTakeWaitsForAGive(t *testing.T) {
	p := newPool(t, 100, 0, map[string]float64{"a": 1, "b": 1})
	a, b := p.Tenant("a"), p.Tenant("b")
	if !a.TryTake(100) {
		t.Fatal("a could not take the remainder")
	}
	done := make(chan error, 1)
	go func() { done <- b.Take(context.Background(), 40) }()
	select {
	case err := <-done:
		t.Fatalf("Take returned %v with no room", err)
	case <-time.After(20 * time.Millisecond):
	}
	a.Give(40)
	if err := <-done; err != nil || b.Used() != 40 {
		t.Fatalf("Take: %v, b holds %d", err, b.Used())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Take(ctx, 1); !errors.Is(err, context.Canceled) || b.Used() != 40 {
		t.Fatalf("Take on an ended context: %v, b holds %d", err, b.Used())
	}
	if err := b.Take(context.Background(), 101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Take above the capacity: %v", err)
	}
}

// TestInvariants drives random takes and gives and checks after each that
// nobody holds another's guarantee and nothing is over capacity.
func TestInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		weights := map[string]float64{"a": 1 + rng.Float64(), "b": 1 + rng.Float64(), "c": 1 + rng.Float64()}
		p := newPool(t, int64(100+rng.IntN(1000)), rng.Float64(), weights)
		names := []string{"a", "b", "c", "d"}
		for range 500 {
			tn := p.Tenant(names[rng.IntN(len(names))])
			n := int64(rng.IntN(60))
			if rng.IntN(2) == 0 {
				tn.TryTake(n)
			} else {
				tn.Give(n)
			}
			var used, lent int64
			for _, name := range names {
				x := p.Tenant(name)
				u := x.Used()
				if u < 0 {
					t.Fatalf("round %d: %s holds %d", round, name, u)
				}
				used += u
				lent += borrowed(u, x.Guarantee())
			}
			if used > p.Capacity() || lent > p.Shared() || lent != p.sharedUsed {
				t.Fatalf("round %d: %d held of %d, %d lent of %d (account says %d)", round, used, p.Capacity(), lent, p.Shared(), p.sharedUsed)
			}
			// Whoever is under its guarantee can take the rest of it now.
			for _, name := range names {
				x := p.Tenant(name)
				if room := x.Guarantee() - x.Used(); room > 0 {
					if !x.TryTake(room) {
						t.Fatalf("round %d: %s could not take %d of its guarantee", round, name, room)
					}
					x.Give(room)
				}
			}
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		capacity int64
		reserved float64
		weights  map[string]float64
	}{
		{-1, 0.5, nil},
		{10, -0.1, nil},
		{10, 1.1, nil},
		{10, 0.5, map[string]float64{"a": 0}},
	} {
		if _, err := New(tc.capacity, tc.reserved, tc.weights); err == nil {
			t.Errorf("New(%d, %v, %v) took it", tc.capacity, tc.reserved, tc.weights)
		}
	}
}

// TestChargeOverTheRemainder: a charge is taken even past the remainder;
// the other tenant keeps its guarantee and borrows again once it is given
// back.
func TestChargeOverTheRemainder(t *testing.T) {
	p := newPool(t, 100, 0.5, map[string]float64{"a": 1, "b": 1})
	a, b := p.Tenant("a"), p.Tenant("b")
	a.Charge(90) // 25 of its guarantee, 65 borrowed of a remainder of 50
	if a.Used() != 90 || a.TryTake(1) {
		t.Fatalf("a holds %d and could take more", a.Used())
	}
	if b.Limit() != 25 || a.Limit() != 90 {
		t.Fatalf("limits a %d, b %d while the remainder is over-charged, want 90 and 25", a.Limit(), b.Limit())
	}
	if !b.TryTake(25) || b.TryTake(1) {
		t.Fatalf("b holds %d: want its whole guarantee and nothing borrowed", b.Used())
	}
	a.Give(90)
	if !b.TryTake(50) || b.TryTake(1) {
		t.Fatalf("b holds %d after a gave back: want its guarantee and the remainder", b.Used())
	}
}
