package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
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

// scan reads every window with a plain (non-group) client over conn
// (kafkaconn.Read) and calls take with each record in one, in offset
// order per partition, until each window is read, take says stop,
// nothing arrives for scanIdle or ctx ends. It reports whether ctx's
// deadline cut it; any other end of ctx, and a fetch error, is an error.
func scan(ctx context.Context, conn []kgo.Opt, ws []*window, take func(*window, *kgo.Record) (stop bool)) (timedOut bool, err error) {
	type tp struct {
		topic     string
		partition int32
	}
	open := map[tp]*window{}
	var spans []kafkaconn.Span
	for _, w := range ws {
		w.next = w.from
		if w.size() <= 0 {
			continue
		}
		open[tp{w.topic, w.partition}] = w
		spans = append(spans, kafkaconn.Span{Topic: w.topic, Partition: w.partition, From: w.from, End: w.end})
	}
	if len(open) == 0 {
		return false, nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(conn), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return false, fmt.Errorf("trace: kafka client: %w", err)
	}
	defer cl.Close()
	err = kafkaconn.Read(ctx, cl, spans, scanIdle, func(r *kgo.Record) (bool, error) {
		w := open[tp{r.Topic, r.Partition}]
		w.next = r.Offset + 1
		w.read++
		return take(w, r), nil
	})
	switch _, fetch := err.(*kafkaconn.FetchError); {
	case err == nil:
		return false, nil
	case fetch:
		return false, fmt.Errorf("trace: %w", err)
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return true, nil
	}
	return false, err
}
