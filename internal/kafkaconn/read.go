package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Span is the offsets [From, End) of one partition that Read reads:
// typically from a listed start offset (or a committed one) to the end
// offset listed before the read starts.
type Span struct {
	Topic     string
	Partition int32
	From, End int64
}

// FetchError is a fetch of one partition that failed.
type FetchError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// Read reads spans through cl, a plain client of the connection that
// consumes nothing else (no group, no topics): it adds the spans'
// partitions to cl at their From offsets. It calls fn with each record
// of a span once, in offset order per partition, until every span is
// read to its End, fn says stop or fails, no record arrives for idle
// although a span is not read (its last offsets are then gaps: compacted
// records, transaction markers; idle 0 waits for ctx), or ctx ends. A
// record at or past its span's End ends that span without fn.
//
// It returns fn's error, ctx.Err() when ctx ended, a *FetchError when a
// fetch failed (a fetch cut by the idle wait is not a failure), and nil
// otherwise. Spans whose End is not past From are not read.
func Read(ctx context.Context, cl *kgo.Client, spans []Span, idle time.Duration, fn func(*kgo.Record) (stop bool, err error)) error {
	type tp struct {
		topic     string
		partition int32
	}
	next := map[tp]int64{}
	end := map[tp]int64{}
	from := map[string]map[int32]kgo.Offset{}
	for _, s := range spans {
		if s.End <= s.From {
			continue
		}
		k := tp{s.Topic, s.Partition}
		next[k], end[k] = s.From, s.End
		if from[s.Topic] == nil {
			from[s.Topic] = map[int32]kgo.Offset{}
		}
		from[s.Topic][s.Partition] = kgo.NewOffset().At(s.From)
	}
	if len(end) == 0 {
		return nil
	}
	cl.AddConsumePartitions(from)
	for len(end) > 0 {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			pctx, cancel = context.WithTimeout(ctx, idle)
		}
		fetches := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if pctx.Err() != nil && fetches.NumRecords() == 0 {
			return nil // idle: what is left are gaps
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = &FetchError{Topic: t, Partition: p, Err: err}
			}
		})
		if ferr != nil {
			return ferr
		}
		var (
			stop bool
			err  error
		)
		fetches.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			e, open := end[k]
			if stop || err != nil || !open || r.Offset < next[k] {
				return
			}
			if r.Offset >= e {
				delete(end, k)
				return
			}
			next[k] = r.Offset + 1
			stop, err = fn(r)
			if next[k] >= e {
				delete(end, k)
			}
		})
		if err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	return nil
}
