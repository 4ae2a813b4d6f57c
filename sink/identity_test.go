package sink

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestIdentity: a sink keys events by (source, event id), keeps the first
// payload of an identity, and reports a second, different one as a
// Conflict.
func TestIdentity(t *testing.T) {
	for _, impl := range []implementation{sqliteImpl(), httpImpl()} {
		t.Run(impl.name, func(t *testing.T) { runIdentity(t, impl) })
	}
}

func TestIntegrationPostgresIdentity(t *testing.T) {
	runIdentity(t, postgresImpl(postgresDSN(t)))
}

func runIdentity(t *testing.T, impl implementation) {
	a := testEvent(1)
	a.Source = "tenant-a"
	b := withPayload(a, "from tenant b")
	b.Source = "tenant-b"
	// a redelivered: the same payload, another offset.
	again := a
	again.Partition, again.Offset = 3, 7777
	a2, a3 := withPayload(a, "second"), withPayload(a, "third")
	a2.Offset, a3.Offset = 2002, 2003
	held := func(i int) Conflict { return Conflict{Index: i, StoredFingerprint: a.PayloadFingerprint} }

	for _, tc := range []struct {
		name   string
		writes [][]Event
		// conflicts is what each write reports. echoed, when set, is what
		// a sink without a conflicts table reports instead: its receiver
		// answers every delivery of a copy alike.
		conflicts, echoed [][]Conflict
		stored            []Event // what Get returns, one per identity
		records           []Event // the conflicts table, for sinks with one
	}{{
		name:      "two sources share an id",
		writes:    [][]Event{{a}, {b}},
		conflicts: [][]Conflict{nil, nil},
		stored:    []Event{a, b},
	}, {
		name:      "two sources share an id in one batch",
		writes:    [][]Event{{a, b}},
		conflicts: [][]Conflict{nil},
		stored:    []Event{a, b},
	}, {
		name:      "same payload again",
		writes:    [][]Event{{a}, {again}, {again, a}},
		conflicts: [][]Conflict{nil, nil, nil},
		stored:    []Event{a},
	}, {
		name:      "different payload",
		writes:    [][]Event{{a}, {a2}, {a2}, {a3}},
		conflicts: [][]Conflict{nil, {held(0)}, nil, {held(0)}},
		echoed:    [][]Conflict{nil, {held(0)}, {held(0)}, {held(0)}},
		stored:    []Event{a},
		records:   []Event{a2, a3},
	}, {
		name:      "different payload in one batch",
		writes:    [][]Event{{a, a2, b, a2}},
		conflicts: [][]Conflict{{held(1)}},
		echoed:    [][]Conflict{{held(1), held(3)}},
		stored:    []Event{a, b},
		records:   []Event{a2},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			clock := newTestClock()
			s, rows := impl.open(t, clock)
			want := tc.conflicts
			if !impl.recordsConflicts && tc.echoed != nil {
				want = tc.echoed
			}
			for i, batch := range tc.writes {
				got, err := s.Write(ctx, batch)
				wantClass(t, err, 0)
				if !slices.Equal(got, want[i]) {
					t.Errorf("write %d: conflicts = %v, want %v", i+1, got, want[i])
				}
			}
			if n, err := rows.Count(ctx); err != nil || n != int64(len(tc.stored)) {
				t.Fatalf("Count = %d, %v; want %d", n, err, len(tc.stored))
			}
			for _, e := range tc.stored {
				row, err := rows.Get(ctx, e.Source, e.ID)
				if err != nil {
					t.Fatalf("Get(%q, %q): %v", e.Source, e.ID, err)
				}
				checkRow(t, impl.stores, e, row, clock.Now())
			}
			if impl.recordsConflicts {
				checkRecords(t, rows.(conflictReader), impl.stores, tc.records, a.PayloadFingerprint, clock.Now())
			}
		})
	}

	if !impl.recordsConflicts {
		return
	}
	// Concurrent batches over the same identities, two payloads each, in
	// opposite orders: each identity keeps one payload and records the
	// other once, reported by one write.
	t.Run("concurrent conflicting batches", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, rows := impl.open(t, newTestClock())
		const n = 20
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			reported = map[string]int{} // by source/id
		)
		errs := make(chan error, 4)
		for g := range 4 {
			batch := testEvents(100, n)
			for i := range batch {
				batch[i] = withPayload(batch[i], fmt.Sprint("payload ", g%2))
			}
			if g >= 2 {
				slices.Reverse(batch)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				conflicts, err := s.Write(ctx, batch)
				mu.Lock()
				for _, c := range conflicts {
					reported[batch[c.Index].Source+"/"+batch[c.Index].ID]++
				}
				mu.Unlock()
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			wantClass(t, err, 0)
		}
		if c, err := rows.Count(ctx); err != nil || c != n {
			t.Fatalf("Count = %d, %v; want %d", c, err, n)
		}
		if len(reported) != n {
			t.Errorf("conflicts reported for %d identities, want %d", len(reported), n)
		}
		for k, c := range reported {
			if c != 1 {
				t.Errorf("conflict of %s reported %d times", k, c)
			}
		}
		recs, err := rows.(conflictReader).Conflicts(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n {
			t.Fatalf("%d conflict records, want %d", len(recs), n)
		}
		for _, r := range recs {
			row, err := rows.Get(ctx, r.Source, r.EventID)
			if err != nil {
				t.Fatal(err)
			}
			if r.StoredFingerprint != row.PayloadFingerprint || r.PayloadFingerprint == row.PayloadFingerprint {
				t.Errorf("record %s/%s: fingerprints %s (stored %s), row holds %s",
					r.Source, r.EventID, r.PayloadFingerprint, r.StoredFingerprint, row.PayloadFingerprint)
			}
		}
	})
}

// checkRecords fails t unless the conflicts table of cr holds exactly the
// copies want, each recorded against stored at firstSeen.
func checkRecords(t *testing.T, cr conflictReader, s stores, want []Event, stored string, firstSeen time.Time) {
	t.Helper()
	recs, err := cr.Conflicts(context.Background(), 1000)
	if err != nil {
		t.Fatalf("Conflicts: %v", err)
	}
	if len(recs) != len(want) {
		t.Fatalf("%d conflict records, want %d: %+v", len(recs), len(want), recs)
	}
	for _, e := range want {
		i := slices.IndexFunc(recs, func(r ConflictRecord) bool {
			return r.Source == e.Source && r.EventID == e.ID && r.PayloadFingerprint == e.PayloadFingerprint
		})
		if i < 0 {
			t.Fatalf("no conflict record of %s/%s %s", e.Source, e.ID, e.PayloadFingerprint)
		}
		if recs[i].StoredFingerprint != stored {
			t.Errorf("record of %s: stored fingerprint %s, want %s", e.PayloadFingerprint, recs[i].StoredFingerprint, stored)
		}
		checkRow(t, s, e, recs[i].Row, firstSeen)
	}
}
