package peers

import (
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ttl := 5 * time.Second
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		beat    *Heartbeat // or
		leave   string     // or expire at now
		now     time.Duration
		ignored string // beat's answer
		want    int    // count after the step
	}
	hb := func(id string, d time.Duration) *Heartbeat { return &Heartbeat{ID: id, Time: at(d)} }
	cases := []struct {
		name  string
		max   int
		steps []step
	}{
		{"alone", 4, []step{{beat: hb("self", 0), want: 1}, {now: time.Hour, want: 1}}},
		{"others counted until the ttl", 4, []step{
			{beat: hb("self", 0), want: 1},
			{beat: hb("b", 0), want: 2},
			{beat: hb("c", 0), want: 3},
			{beat: hb("self", 4*time.Second), now: 4 * time.Second, want: 3},
			{beat: hb("b", 4*time.Second), now: 4 * time.Second, want: 3},
			{now: 5 * time.Second, want: 3},
			{now: 5*time.Second + 1, want: 2}, // c silent past the ttl
			{now: 9*time.Second + 1, want: 2}, // b's 4s beat is not past the ttl: self's is, so nothing expires
		}},
		{"blind keeps the count", 4, []step{
			{beat: hb("self", 0), want: 1},
			{beat: hb("b", time.Second), now: time.Second, want: 2},
			{now: time.Minute, want: 2}, // self's own heartbeat is a minute old: no expiry
			{beat: hb("self", time.Minute), now: time.Minute, want: 2},
			{now: time.Minute, want: 1},
		}},
		{"tombstone at once", 4, []step{
			{beat: hb("self", 0), want: 1},
			{beat: hb("b", 0), want: 2},
			{leave: "b", want: 1},
		}},
		{"stale backlog ignored", 4, []step{
			{beat: hb("old", 0), now: ttl + time.Second, ignored: ignoredStale, want: 1},
		}},
		{"clock ahead does not extend", 4, []step{
			{beat: hb("self", 0), want: 1},
			{beat: hb("b", time.Hour), want: 2}, // counted from now, not from its clock
			{beat: hb("self", ttl+1), now: ttl + 1, want: 2},
			{now: ttl + 1, want: 1},
		}},
		{"over cap", 2, []step{
			{beat: hb("b", 0), want: 2},
			{beat: hb("c", 0), want: 3},
			{beat: hb("d", 0), ignored: ignoredOverCap, want: 3},
			{beat: hb("b", 0), want: 3}, // a member already counted still beats
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTable("self", ttl, c.max)
			for i, s := range c.steps {
				now := at(s.now)
				switch {
				case s.beat != nil:
					if got := tb.beat(*s.beat, now); got != s.ignored {
						t.Fatalf("step %d: beat %v: ignored %q, want %q", i, s.beat, got, s.ignored)
					}
				case s.leave != "":
					tb.leave(s.leave)
				default:
					tb.expire(now)
				}
				if got := tb.count(); got != s.want {
					t.Fatalf("step %d: count %d, want %d", i, got, s.want)
				}
			}
		})
	}
}
