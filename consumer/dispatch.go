package consumer

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// job is one polled record on its way to the sink or the DLQ.
type job struct {
	rec  *kgo.Record
	part *partState
	key  string
	// env is the envelope of a DLQ record being drained; nil otherwise.
	env *record.Envelope
}

// keyQueue holds the jobs of one key in offset order; jobs[0] is running
// or ready.
type keyQueue struct {
	jobs []*job
}

// poll fetches while there is room in flight and hands each record to its
// key's queue. Rebalances are blocked from PollRecords until
// AllowRebalance, so a record is registered in its partition's watermark
// before the partition can be revoked.
func (c *Consumer) poll(ctx context.Context) error {
	for {
		free, err := c.waitFree(ctx)
		if err != nil {
			return nil
		}
		fetches := c.client.PollRecords(ctx, free)
		if fetches.IsClientClosed() {
			c.client.AllowRebalance()
			return ErrClosed
		}
		if ctx.Err() != nil {
			c.client.AllowRebalance()
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			c.log.Warn("fetch", "topic", t, "partition", p, "err", err)
		})
		rewind := make(map[string]map[int32]kgo.EpochOffset)
		fetches.EachRecord(func(r *kgo.Record) { c.dispatch(r, rewind) })
		if len(rewind) > 0 {
			// DLQ records past the drain pass were polled: stop their
			// partitions and fetch them again in the next pass.
			pause := make(map[string][]int32)
			for t, ps := range rewind {
				for p := range ps {
					pause[t] = append(pause[t], p)
				}
			}
			c.client.PauseFetchPartitions(pause)
			c.client.SetOffsets(rewind)
		}
		c.client.AllowRebalance()
	}
}

// waitFree returns how many records may be polled, waiting while none may.
func (c *Consumer) waitFree(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		free := c.cfg.MaxInFlight - c.inFlight
		c.mu.Unlock()
		if free > 0 {
			return free, nil
		}
		select {
		case <-c.freed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// dispatch registers r as in flight and queues it behind earlier records
// of its key. A DLQ record at or past its pass's end is not dispatched:
// its partition goes into rewind, to be fetched again from it.
func (c *Consumer) dispatch(r *kgo.Record, rewind map[string]map[int32]kgo.EpochOffset) {
	tp := topicPartition{r.Topic, r.Partition}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[tp]
	if p == nil || p.gone.Load() {
		// Not ours (any more): its owner fetches it from the committed
		// offset.
		return
	}
	if p.dlq {
		end := p.passEnd.Load()
		if r.Offset >= end {
			if rewind[r.Topic] == nil {
				rewind[r.Topic] = make(map[int32]kgo.EpochOffset)
			}
			if _, ok := rewind[r.Topic][r.Partition]; !ok {
				rewind[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset}
			}
			p.polledPass.Store(true)
			return
		}
		if r.Offset == end-1 {
			p.polledPass.Store(true)
		}
	}
	if err := p.wm.Add(r.Offset); err != nil {
		// A refetch of an offset already in flight.
		return
	}
	p.next.Store(r.Offset + 1)
	p.add()
	c.inFlight++
	c.m.inFlight.Set(float64(c.inFlight))
	j := &job{rec: r, part: p, key: r.Topic + "\x00" + strconv.Itoa(int(r.Partition)) + "\x00" + string(r.Key)}
	if q := c.keys[j.key]; q != nil {
		q.jobs = append(q.jobs, j)
		return
	}
	c.keys[j.key] = &keyQueue{jobs: []*job{j}}
	c.ready <- j
}

// finish ends j: done says its side effect happened (written, or
// dead-lettered and acknowledged), so its offset may be committed. The
// next job of its key becomes ready.
func (c *Consumer) finish(j *job, done bool) {
	if done && !j.part.gone.Load() {
		j.part.wm.Done(j.rec.Offset)
	}
	c.mu.Lock()
	q := c.keys[j.key]
	q.jobs = q.jobs[1:]
	if len(q.jobs) == 0 {
		delete(c.keys, j.key)
	} else {
		c.ready <- q.jobs[0]
	}
	c.inFlight--
	n := c.inFlight
	c.m.inFlight.Set(float64(n))
	c.mu.Unlock()
	j.part.release()
	select {
	case c.freed <- struct{}{}:
	default:
	}
	if n == 0 || j.part.dlq {
		c.wakeMode()
	}
}

// work runs batches of ready jobs until stop is closed.
func (c *Consumer) work(stop <-chan struct{}) {
	batch := make([]*job, 0, c.cfg.WriteBatch)
	for {
		var j *job
		select {
		case j = <-c.ready:
		case <-stop:
			return
		}
		batch = append(batch[:0], j)
		// A batch holds jobs of one partition, so that it is abandoned
		// with its partition; DLQ records run alone, each its own drain.
	fill:
		for !j.part.dlq && len(batch) < c.cfg.WriteBatch {
			select {
			case next := <-c.ready:
				if next.part != j.part {
					c.ready <- next
					break fill
				}
				batch = append(batch, next)
			default:
				break fill
			}
		}
		c.process(batch)
	}
}
