package share

// Charge takes n whatever room is left: beyond the tenant's guarantee it
// counts as borrowed from the shared remainder even when that puts the
// remainder over its size. It is for holdings that exist whether the
// pool allows them or not (records already on disk when the pool is
// built); until they are given back, other tenants can borrow less, but
// no tenant loses any of its guarantee.
func (t *Tenant) Charge(n int64) {
	if n <= 0 {
		return
	}
	p := t.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sharedUsed += borrowed(t.used+n, t.guarantee) - borrowed(t.used, t.guarantee)
	t.used += n
}
