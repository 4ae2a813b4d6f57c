package share

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool is a capacity split into guaranteed parts and a shared remainder.
type Pool struct {
	capacity int64
	shared   int64 // capacity - the guarantees

	mu         sync.Mutex
	sharedUsed int64
	tenants    map[string]*Tenant
	// freed is closed, and replaced, when capacity is given back, to wake
	// the Takes that wait.
	freed chan struct{}
}

// Tenant is one tenant's account in a Pool.
type Tenant struct {
	pool      *Pool
	name      string
	guarantee int64
	used      int64 // guarded by pool.mu
}

// New splits capacity: reserved (in [0, 1]) of it is guaranteed to the
// tenants named in weights, in proportion to their weights (each > 0), and
// the rest is shared. With no tenants everything is shared.
func New(capacity int64, reserved float64, weights map[string]float64) (*Pool, error) {
	if capacity < 0 {
		return nil, fmt.Errorf("share: capacity %d is negative", capacity)
	}
	if reserved < 0 || reserved > 1 {
		return nil, fmt.Errorf("share: reserved fraction %v is outside [0, 1]", reserved)
	}
	total := 0.0
	for name, w := range weights {
		if !(w > 0) {
			return nil, fmt.Errorf("share: tenant %q has weight %v; a weight must be above 0", name, w)
		}
		total += w
	}
	p := &Pool{capacity: capacity, tenants: make(map[string]*Tenant, len(weights)), freed: make(chan struct{})}
	guaranteed := int64(0)
	for name, w := range weights {
		g := int64(float64(capacity) * reserved * w / total)
		p.tenants[name] = &Tenant{pool: p, name: name, guarantee: g}
		guaranteed += g
	}
	p.shared = capacity - guaranteed
	return p, nil
}

// Capacity is the pool's whole capacity.
func (p *Pool) Capacity() int64 { return p.capacity }

// Shared is the remainder any tenant may borrow from.
func (p *Pool) Shared() int64 { return p.shared }

// Tenant is name's account. A name the pool was not built with gets an
// account without a guarantee, kept for later calls.
func (p *Pool) Tenant(name string) *Tenant {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tenants[name]
	if !ok {
		t = &Tenant{pool: p, name: name}
		p.tenants[name] = t
	}
	return t
}

// Name is the tenant's name.
func (t *Tenant) Name() string { return t.name }

// Guarantee is what the tenant can always hold.
func (t *Tenant) Guarantee() int64 { return t.guarantee }

// Used is what the tenant holds.
func (t *Tenant) Used() int64 {
	t.pool.mu.Lock()
	defer t.pool.mu.Unlock()
	return t.used
}

// Limit is the most the tenant could hold now: its guarantee and what of
// the shared remainder nobody has borrowed, beside what it holds of it.
func (t *Tenant) Limit() int64 {
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.guarantee + max(0, p.shared-p.sharedUsed) + borrowed(t.used, t.guarantee)
}

// borrowed is what of used is beyond the guarantee g.
func borrowed(used, g int64) int64 { return max(0, used-g) }

// TryTake takes n if the tenant's guarantee and the shared remainder have
// room for it now; otherwise it takes nothing and returns false.
func (t *Tenant) TryTake(n int64) bool {
	if n < 0 {
		return false
	}
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	extra := borrowed(t.used+n, t.guarantee) - borrowed(t.used, t.guarantee)
	// extra > 0: a take within the guarantee needs nothing of the
	// remainder, even while Charge has put it over its size.
	if extra > 0 && p.sharedUsed+extra > p.shared {
		return false
	}
	t.used += n
	p.sharedUsed += extra
	return true
}

// Take is TryTake that waits for room until ctx ends; it returns ctx's
// error if it ends first, and then nothing is taken. n above what the
// tenant could ever hold (its guarantee and the whole remainder) is
// refused at once with ErrTooLarge.
func (t *Tenant) Take(ctx context.Context, n int64) error {
	if n > t.guarantee+t.pool.shared {
		return fmt.Errorf("%w: %d, of at most %d", ErrTooLarge, n, t.guarantee+t.pool.shared)
	}
	for {
		p := t.pool
		p.mu.Lock()
		freed := p.freed
		p.mu.Unlock()
		if t.TryTake(n) {
			return nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ErrTooLarge is Take's refusal of more than a tenant could ever hold.
var ErrTooLarge = errors.New("share: more than the tenant can hold")

// Give gives back n the tenant took: its borrowing first, then its
// guarantee. Giving back more than it holds gives back what it holds.
func (t *Tenant) Give(n int64) {
	if n <= 0 {
		return
	}
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, t.used)
	p.sharedUsed -= borrowed(t.used, t.guarantee) - borrowed(t.used-n, t.guarantee)
	t.used -= n
	close(p.freed)
	p.freed = make(chan struct{})
}
