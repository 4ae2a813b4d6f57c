package consumer

import (
	"errors"
	"testing"
)

func TestWatermark(t *testing.T) {
	type step struct {
		add  []int64
		done []int64
		// want is the committable offset after the step; -1 for none.
		want     int64
		inFlight int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{
			{add: []int64{0, 1, 2}, want: -1, inFlight: 3},
			{done: []int64{0}, want: 1, inFlight: 2},
			{done: []int64{1, 2}, want: 3, inFlight: 0},
		}},
		{"out of order waits for the lowest", []step{
			{add: []int64{0, 1, 2, 3}, done: []int64{3, 2, 1}, want: -1, inFlight: 1},
			{done: []int64{0}, want: 4, inFlight: 0},
		}},
		{"gaps from compaction and markers are stepped over", []step{
			{add: []int64{5, 9, 10, 20}, done: []int64{9}, want: -1, inFlight: 3},
			{done: []int64{5}, want: 10, inFlight: 2},
			{done: []int64{20}, want: 10, inFlight: 1},
			{done: []int64{10}, want: 21, inFlight: 0},
		}},
		{"later adds after a full commit", []step{
			{add: []int64{0}, done: []int64{0}, want: 1},
			{add: []int64{7}, want: 1, inFlight: 1},
			{done: []int64{7}, want: 8},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWatermark()
			for i, s := range tt.steps {
				for _, o := range s.add {
					if err := w.add(o); err != nil {
						t.Fatalf("step %d: Add(%d): %v", i, o, err)
					}
				}
				for _, o := range s.done {
					if !w.done(o) {
						t.Fatalf("step %d: Done(%d) = false", i, o)
					}
				}
				got, ok := w.committable()
				if !ok {
					got = -1
				}
				if got != s.want {
					t.Fatalf("step %d: Committable = %d, want %d", i, got, s.want)
				}
				if n := w.inFlight(); n != s.inFlight {
					t.Fatalf("step %d: InFlight = %d, want %d", i, n, s.inFlight)
				}
			}
		})
	}
}

func TestWatermarkRefusals(t *testing.T) {
	w := newWatermark()
	if err := w.add(3); err != nil {
		t.Fatal(err)
	}
	if err := w.add(3); !errors.Is(err, errOffsetOrder) {
		t.Fatalf("Add(3) again: %v, want errOffsetOrder", err)
	}
	if err := w.add(2); !errors.Is(err, errOffsetOrder) {
		t.Fatalf("Add(2) after 3: %v, want errOffsetOrder", err)
	}
	if w.done(4) {
		t.Fatal("Done of an offset never added")
	}
	if !w.done(3) || w.done(3) {
		t.Fatal("Done twice must succeed once")
	}
}

// TestWatermarkLong checks that reclaiming the passed prefix keeps the
// answers right over many offsets completed in a shuffled order.
func TestWatermarkLong(t *testing.T) {
	w := newWatermark()
	const n = 10000
	for i := range int64(n) {
		if err := w.add(i * 2); err != nil {
			t.Fatal(err)
		}
	}
	// Finish in blocks of 100, each block backwards.
	for b := int64(0); b < n; b += 100 {
		for i := b + 99; i >= b; i-- {
			if !w.done(i * 2) {
				t.Fatalf("Done(%d) = false", i*2)
			}
			got, _ := w.committable()
			want := int64(-1)
			if i == b {
				want = (b+99)*2 + 1
			} else if b > 0 {
				want = (b-1)*2 + 1
			}
			if got != want {
				t.Fatalf("after Done(%d): Committable = %d, want %d", i*2, got, want)
			}
		}
	}
	if len(w.pending) > 200 {
		t.Fatalf("pending holds %d entries after everything finished", len(w.pending))
	}
}
