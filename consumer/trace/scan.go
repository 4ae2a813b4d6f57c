package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// scanIdle ends a scan when no record arrives for this long although some
// window has not reached its end: its last offsets are then gaps
// (compacted records, transaction markers), not records.
const scanIdle = 5 * time.Second

// window is one partition's range of offsets a scan reads, [from, end).
type window struct {
	search    *Search
	topic     string
	partition int32
	// start is where the range would begin without the record bound;
	// allot moves from up from it, keeping the newest records.
	start, from, end int64
	// next is the offset after the last record read.
	next int64
	read int64
}

func (w *window) size() int64 { return w.end - w.from }

// allot cuts windows so that they hold at most budget records in all,
// sharing it evenly between partitions (one whose window is smaller than
// its share leaves the rest to the others) and keeping each partition's
// newest records. It reports whether it cut any.
func allot(ws []*window, budget int64) bool {
	order := make([]*window, 0, len(ws))
	for _, w := range ws {
		if w.size() > 0 {
			order = append(order, w)
		}
	}
	slices.SortStableFunc(order, func(a, b *window) int {
		switch {
		case a.size() < b.size():
			return -1
		case a.size() > b.size():
			return 1
		}
		return 0
	})
	cut := false
	left := max(budget, 0)
	for i, w := range order {
		share := left / int64(len(order)-i)
		if w.size() > share {
			w.from = w.end - share
			cut = true
		}
		left -= w.size()
	}
	return cut
}

// scan reads every window with a plain (non-group) client over kopts and
// calls take with each record in one, in offset order per partition,
// until each window is read, take says stop, nothing arrives for scanIdle
// or ctx ends. It reports whether ctx's deadline cut it; any other end of
// ctx, and a fetch error, is an error.
func scan(ctx context.Context, kopts []kgo.Opt, ws []*window, take func(*window, *kgo.Record) (stop bool)) (timedOut bool, err error) {
	type tp struct {
		topic     string
		partition int32
	}
	open := map[tp]*window{}
	from := map[string]map[int32]kgo.Offset{}
	for _, w := range ws {
		w.next = w.from
		if w.size() <= 0 {
			continue
		}
		open[tp{w.topic, w.partition}] = w
		if from[w.topic] == nil {
			from[w.topic] = map[int32]kgo.Offset{}
		}
		from[w.topic][w.partition] = kgo.NewOffset().At(w.from)
	}
	if len(open) == 0 {
		return false, nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(kopts),
		kgo.ConsumePartitions(from),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return false, fmt.Errorf("trace: kafka client: %w", err)
	}
	defer cl.Close()
	for len(open) > 0 {
		pctx, cancel := context.WithTimeout(ctx, scanIdle)
		fetches := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return true, nil
			}
			return false, err
		}
		if pctx.Err() != nil && fetches.NumRecords() == 0 {
			return false, nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("trace: fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return false, ferr
		}
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			w := open[k]
			if stop || w == nil || r.Offset < w.next {
				return
			}
			if r.Offset >= w.end {
				delete(open, k)
				return
			}
			w.next = r.Offset + 1
			w.read++
			if take(w, r) {
				stop = true
			}
			if w.next >= w.end {
				delete(open, k)
			}
		})
		if stop {
			return false, nil
		}
	}
	return false, nil
}
