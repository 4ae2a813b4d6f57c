package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactPercentile is the nearest-rank percentile of sorted values, the
// definition Histogram.Percentile approximates.
func exactPercentile(sorted []int64, q float64) int64 {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramPercentileErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() int64{
		"constant":     func() int64 { return 1_234_567 },
		"uniform 0-1s": func() int64 { return rng.Int64N(int64(time.Second)) },
		"exponential":  func() int64 { return int64(rng.ExpFloat64() * float64(5*time.Millisecond)) },
		"bimodal": func() int64 {
			if rng.IntN(100) < 95 {
				return 200*int64(time.Microsecond) + rng.Int64N(int64(50*time.Microsecond))
			}
			return 2*int64(time.Second) + rng.Int64N(int64(time.Second))
		},
		"small exact": func() int64 { return rng.Int64N(300) },
		"huge":        func() int64 { return math.MaxInt64 - rng.Int64N(1<<40) },
	}
	qs := []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for name, draw := range dists {
		t.Run(name, func(t *testing.T) {
			h := NewHistogram()
			vals := make([]int64, 20_000)
			for i := range vals {
				vals[i] = draw()
				h.Record(time.Duration(vals[i]))
			}
			slices.Sort(vals)
			for _, q := range qs {
				want := float64(exactPercentile(vals, q))
				got := float64(h.Percentile(q))
				if err := math.Abs(got-want) / max(want, 1); err > RelativeError {
					t.Errorf("p%v = %.0f, exact %.0f: relative error %.5f over the bound %.5f", q*100, got, want, err, RelativeError)
				}
			}
			if h.Max() != time.Duration(vals[len(vals)-1]) {
				t.Errorf("max %d, want %d", h.Max(), vals[len(vals)-1])
			}
			if h.Count() != uint64(len(vals)) {
				t.Errorf("count %d, want %d", h.Count(), len(vals))
			}
		})
	}
}

// TestHistogramBuckets: every value lies inside the range of its bucket,
// and buckets are never wider than the error bound allows.
func TestHistogramBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []int64{0, 1, 255, 256, 257, 511, 512, 1 << 20, 1<<20 - 1, math.MaxInt64}
	for range 10_000 {
		vals = append(vals, rng.Int64N(math.MaxInt64>>rng.IntN(63)))
	}
	for _, v := range vals {
		i := bucketOf(v)
		if i < 0 || i >= buckets {
			t.Fatalf("value %d: bucket %d out of [0, %d)", v, i, buckets)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if width := float64(hi - lo + 1); i >= subCount && width/float64(lo) > 2*RelativeError {
			t.Fatalf("bucket %d = [%d, %d] is wider than the bound allows", i, lo, hi)
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	whole, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 5000 {
		d := time.Duration(rng.Int64N(int64(10 * time.Second)))
		whole.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	a.Merge(NewHistogram()) // merging an empty one changes nothing
	if *a != *whole {
		t.Fatalf("merged histogram differs from the one that recorded everything")
	}
	empty := NewHistogram()
	empty.Merge(whole)
	if *empty != *whole {
		t.Fatalf("merging into an empty histogram differs")
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	h := NewHistogram()
	if h.Percentile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Fatalf("empty histogram: p50 %v max %v mean %v, want 0", h.Percentile(0.5), h.Max(), h.Mean())
	}
	h.Record(-time.Second)
	if h.Max() != 0 || h.Percentile(1) != 0 {
		t.Fatalf("a negative duration should count as 0: max %v", h.Max())
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	rng := rand.New(rand.NewPCG(7, 8))
	vals := make([]time.Duration, 1024)
	for i := range vals {
		vals[i] = time.Duration(rng.Int64N(int64(time.Second)))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.Record(vals[i&1023])
	}
}

func BenchmarkHistogramPercentile(b *testing.B) {
	h := NewHistogram()
	rng := rand.New(rand.NewPCG(9, 10))
	for range 100_000 {
		h.Record(time.Duration(rng.Int64N(int64(time.Second))))
	}
	for b.Loop() {
		_ = h.Percentile(0.999)
	}
}

func BenchmarkHistogramMerge(b *testing.B) {
	x, y := NewHistogram(), NewHistogram()
	y.Record(time.Millisecond)
	for b.Loop() {
		x.Merge(y)
	}
}
