package contract

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultKeepVersions is how many versions of each type Versions keeps
// when NewVersions is given 0: the one served and the two before it.
const DefaultKeepVersions = 3

// MaxKeepVersions bounds NewVersions' keep: every version kept holds its
// compiled decoders and validator in memory.
const MaxKeepVersions = 16

// Versions is the registry a process serves now, swapped whole by a
// reload, and the contracts of each type it served before, so that records
// published under an earlier version still decode while a tier rolls
// onto a new one. It is safe for concurrent use; a reader that took
// Registry or Lookup keeps what it took, whatever is swapped in after.
type Versions struct {
	keep  int
	mu    sync.Mutex // serializes Swap
	state atomic.Pointer[versionsState]
}

type versionsState struct {
	registry *Registry
	// history holds each type's contracts, newest first, one per
	// fingerprint, at most keep.
	history map[string][]*Contract
}

// NewVersions serves r and keeps up to keep versions of each type (0:
// DefaultKeepVersions; at most MaxKeepVersions).
func NewVersions(r *Registry, keep int) (*Versions, error) {
	if r == nil {
		return nil, errors.New("contract: versions of no registry")
	}
	if keep == 0 {
		keep = DefaultKeepVersions
	}
	if keep < 1 || keep > MaxKeepVersions {
		return nil, fmt.Errorf("contract: keep %d versions: must be within [1, %d]", keep, MaxKeepVersions)
	}
	v := &Versions{keep: keep}
	st := &versionsState{registry: r, history: make(map[string][]*Contract, len(r.types))}
	for _, typ := range r.types {
		st.history[typ] = []*Contract{r.contracts[typ]}
	}
	v.state.Store(st)
	return v, nil
}

// Registry is the registry served now.
func (v *Versions) Registry() *Registry { return v.state.Load().registry }

// Swap serves next from now on and returns the registry it replaces. Each
// type's contract in next becomes its newest version; a type next lacks
// keeps its history (a reload refuses such a registry before it gets
// here, but Versions does not rely on it).
func (v *Versions) Swap(next *Registry) (prev *Registry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.state.Load()
	st := &versionsState{registry: next, history: make(map[string][]*Contract, len(old.history)+len(next.types))}
	for typ, h := range old.history {
		st.history[typ] = h
	}
	for _, typ := range next.types {
		c := next.contracts[typ]
		h := slices.DeleteFunc(slices.Clone(old.history[typ]), func(k *Contract) bool { return k.fingerprint == c.fingerprint })
		h = append([]*Contract{c}, h...)
		st.history[typ] = h[:min(len(h), v.keep)]
	}
	v.state.Store(st)
	return old.registry
}

// Lookup returns the contract of typ whose fingerprint is fingerprint,
// and true, when it is a version kept. Otherwise it returns the newest
// version of typ and false, or nil and false for a type never served.
func (v *Versions) Lookup(typ, fingerprint string) (*Contract, bool) {
	h := v.state.Load().history[typ]
	for _, c := range h {
		if c.fingerprint == fingerprint {
			return c, true
		}
	}
	if len(h) == 0 {
		return nil, false
	}
	return h[0], false
}

// History returns typ's kept versions, newest first.
func (v *Versions) History(typ string) []*Contract {
	return slices.Clone(v.state.Load().history[typ])
}
