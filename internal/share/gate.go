package share

// Used is what every tenant holds together.
func (p *Pool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, t := range p.tenants {
		n += t.used
	}
	return n
}

// Free is what nobody holds: Capacity less Used. A tenant refused while
// Free has room for it is refused by the shares (the room is another
// tenant's guarantee), not by the capacity.
func (p *Pool) Free() int64 { return p.capacity - p.Used() }
