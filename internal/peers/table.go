package peers

import "time"

// DefaultMaxMembers bounds the members a replica tracks.
const DefaultMaxMembers = 1024

// Why a heartbeat is ignored (the reason label of
// sluice_gateway_heartbeats_ignored_total).
const (
	ignoredMalformed = "malformed" // not a heartbeat (DecodeHeartbeat)
	ignoredStale     = "stale"     // older than the TTL when read: a member gone before this one started
	ignoredOverCap   = "over_cap"  // a new member while the table is full
)

// table is the members one replica counts, itself apart: the time each
// other member was last seen alive, and when this replica last read its
// own heartbeat back. It is owned by one goroutine.
type table struct {
	self     string
	ttl      time.Duration
	max      int
	members  map[string]time.Time
	selfSeen time.Time // zero until this replica read its own heartbeat
}

func newTable(self string, ttl time.Duration, maxMembers int) *table {
	return &table{self: self, ttl: ttl, max: maxMembers, members: map[string]time.Time{}}
}

// beat records h read at now, and says why it was ignored, or "". A member
// was alive at the earlier of its own stamp and now: a stamp from a clock
// ahead of this one cannot keep it counted longer than the TTL, and a
// record older than the TTL when read (from the topic's backlog) is of a
// member that is gone.
func (t *table) beat(h Heartbeat, now time.Time) string {
	seen := h.Time
	if seen.After(now) {
		seen = now
	}
	if now.Sub(seen) > t.ttl {
		return ignoredStale
	}
	if h.ID == t.self {
		if seen.After(t.selfSeen) {
			t.selfSeen = seen
		}
		return ""
	}
	last, ok := t.members[h.ID]
	if !ok && len(t.members) >= t.max {
		return ignoredOverCap
	}
	if seen.After(last) {
		t.members[h.ID] = seen
	}
	return ""
}

// leave forgets id at once: its tombstone was read.
func (t *table) leave(id string) { delete(t.members, id) }

// expire forgets the members not seen within the TTL. It does so only
// while this replica reads its own heartbeats back within the TTL: one
// that cannot read the topic cannot tell a silent member from its own
// blindness, and keeps the count it has (it errs towards each replica
// taking less than its share, not towards every replica taking the whole
// rate).
func (t *table) expire(now time.Time) {
	if t.selfSeen.IsZero() || now.Sub(t.selfSeen) > t.ttl {
		return
	}
	for id, seen := range t.members {
		if now.Sub(seen) > t.ttl {
			delete(t.members, id)
		}
	}
}

// blind says whether this replica has not read its own heartbeat back
// within the TTL.
func (t *table) blind(now time.Time) bool {
	return t.selfSeen.IsZero() || now.Sub(t.selfSeen) > t.ttl
}

// count is the replicas alive: this one and the members it counts.
func (t *table) count() int { return 1 + len(t.members) }
