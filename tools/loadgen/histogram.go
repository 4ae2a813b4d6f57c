package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's resolution: every power-of-two range of
// values is split into 2^(subBits-1) equal buckets, so a bucket is never
// wider than 1/2^(subBits-1) of its lower bound.
const subBits = 8

const (
	subCount = 1 << subBits // exact buckets for values below subCount
	halfSub  = subCount / 2 // buckets per power of two above that
	numShift = 64 - subBits // shifts 1..numShift cover every int64 >= subCount
	buckets  = subCount + numShift*halfSub
)

// RelativeError bounds how far a reported percentile may be from the true
// one, as a fraction of the true value: a value is reported as the middle
// of its bucket, and a bucket is at most 1/halfSub of its lower bound wide.
const RelativeError = 1.0 / subCount

// Histogram counts durations in log-linear buckets: exact below 256ns,
// then 128 buckets per power of two. Its memory is fixed (about 57 KiB)
// whatever it records; histograms of workers merge by adding counts. It is
// not safe for concurrent use: each worker owns one and Merge combines them.
type Histogram struct {
	counts   [buckets]uint64
	total    uint64
	min, max int64
	sum      float64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{min: math.MaxInt64} }

// bucketOf returns the bucket of v >= 0.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits // >= 1
	top := int(v >> shift)                   // in [halfSub, subCount)
	return subCount + (shift-1)*halfSub + top - halfSub
}

// bucketRange returns the values [lo, hi] that fall into bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	j := i - subCount
	shift := j/halfSub + 1
	top := int64(j%halfSub + halfSub)
	lo = top << shift
	return lo, lo + (int64(1) << shift) - 1
}

// Record counts d; a negative d counts as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)]++
	h.total++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest recorded value, exactly; 0 when empty.
func (h *Histogram) Max() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.max)
}

// Mean is the mean of the recorded values, exactly; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Percentile returns the value at or below which fraction q (in [0, 1]) of
// the recorded values fall, within RelativeError of the true value; 0 when
// empty.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := lo + (hi-lo)/2
			return time.Duration(min(max(v, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
