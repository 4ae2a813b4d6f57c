package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/record"
)

// lookup is one Trace: what it found, then its Answer.
type lookup struct {
	t   *Tracer
	q   Query
	lim Limits
	a   *Answer

	// rows are the audit table's (rowsFrom FromAuditTable), or none
	// without one; topicRows those read from record.AuditTopic: all of
	// them without a table, and beside one the rows the consumer recorded
	// there while the table did not take them.
	rows      []audit.Row
	rowsFrom  string
	topicRows []audit.Row
	// committed are the group's committed offsets, nil until listed.
	committed kadm.OffsetResponses
	starts    kadm.ListedOffsets
	ends      kadm.ListedOffsets
	windows   []*window
	// sourceOnly: the windows are a source topic's and sluice.audit's
	// (an event a replay produced again), so the scan may stop at the
	// first pending copy.
	sourceOnly bool
	stopped    bool
	// letters are the event's records found in DLQ and parked topics,
	// copies its records found in source topics (past the committed
	// offsets, or at the hint).
	letters []found
	copies  []found
	// hintSearch is the hint's search, to note what was found there.
	hintSearch *Search
}

// found is a record of the event read in a scan.
type found struct {
	kind   string // SearchDLQ, SearchParked, SearchSource, SearchHint
	pos    Position
	ev     record.EventHeaders
	env    record.Envelope
	envErr error
}

func newAnswer(q Query, lim Limits) *Answer {
	return &Answer{Source: q.Source, ID: q.ID, Path: []Step{}, Audit: []Row{}, Searched: []Search{},
		Limits: LimitsUsed{MaxRecords: lim.MaxRecords, Timeout: lim.Timeout.String()}}
}

// run gathers the evidence: the audit table's rows when the Tracer has
// one, then one bounded scan of the topics that may say more:
// sluice.audit (beside an audit table, for the rows the consumer recorded
// there while the table did not take them), and, unless the table's rows
// settle where the event is, the DLQ and parked topics and the source
// topics past the committed offsets (or the hint's record).
func (lk *lookup) run(ctx context.Context) error {
	t := lk.t
	replayedTo := ""
	final := false
	if t.o.reader != nil {
		rows, err := t.o.reader.AuditRows(ctx, lk.q.Source, lk.q.ID)
		if err != nil {
			return fmt.Errorf("trace: audit table: %w", err)
		}
		lk.rows, lk.rowsFrom = rows, FromAuditTable
		lk.a.Searched = append(lk.a.Searched, Search{What: SearchAuditTable, Read: int64(len(rows)), InRange: int64(len(rows)), Found: len(rows)})
		var last *audit.Row
		last, final = settled(rows)
		if !final && last != nil && last.Action == audit.Replayed {
			replayedTo = record.SourceOf(last.Topic)
		}
	}

	// What to scan, by kind, each kind's topics in order.
	type plan struct {
		what   string
		topics []string
	}
	plans := []plan{{SearchAuditTopic, []string{record.AuditTopic}}}
	sources := t.sources
	if replayedTo != "" && slices.Contains(t.sources, replayedTo) {
		// A replay produced the event to replayedTo: only a copy there is
		// still to come.
		sources = []string{replayedTo}
	}
	switch {
	case final:
	case replayedTo == "":
		var dlqs, parked []string
		for _, s := range t.sources {
			dlqs = append(dlqs, record.DLQTopic(s))
			parked = append(parked, record.ParkedTopic(s))
		}
		plans = append(plans, plan{SearchDLQ, dlqs}, plan{SearchParked, parked})
	}
	if !final {
		if h := lk.q.Hint; h != nil && replayedTo == "" {
			plans = append(plans, plan{SearchHint, []string{h.Topic}})
		} else {
			plans = append(plans, plan{SearchSource, sources})
		}
	}
	lk.sourceOnly = replayedTo != ""

	var topics []string
	for _, p := range plans {
		topics = append(topics, p.topics...)
	}
	if err := lk.listOffsets(ctx, topics); err != nil {
		return err
	}
	// Searched holds pointers' targets: size it first so that appending
	// does not move them.
	n := len(lk.a.Searched)
	for _, p := range plans {
		n += len(p.topics)
	}
	lk.a.Searched = slices.Grow(lk.a.Searched, n)
	for _, p := range plans {
		for _, topic := range p.topics {
			lk.a.Searched = append(lk.a.Searched, Search{What: p.what, Topic: topic})
			lk.plan(&lk.a.Searched[len(lk.a.Searched)-1])
		}
	}
	allot(lk.windows, lk.lim.MaxRecords)
	timedOut, err := scan(ctx, t.conn, lk.windows, lk.take)
	if err != nil {
		return err
	}
	lk.report(timedOut)
	return nil
}

// listOffsets lists the start and end offsets of topics and the group's
// committed offsets.
func (lk *lookup) listOffsets(ctx context.Context, topics []string) error {
	adm := lk.t.adm
	var err error
	if lk.committed, err = adm.FetchOffsets(ctx, lk.t.group); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("trace: committed offsets of group %s: %w", lk.t.group, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("trace: list start offsets: %w", err)
	}
	if lk.ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
		return fmt.Errorf("trace: list end offsets: %w", err)
	}
	lk.starts = starts
	return nil
}

// resumeAt is where the group resumes in a partition that starts at
// start: its committed offset, or start when it committed none (the
// consumer's reset offset is the log start).
func (lk *lookup) resumeAt(topic string, partition int32, start int64) int64 {
	if o, ok := lk.committed.Lookup(topic, partition); ok && o.Err == nil && o.At > start {
		return o.At
	}
	return start
}

// plan adds the windows of s's topic.
func (lk *lookup) plan(s *Search) {
	if s.What == SearchHint {
		lk.hintSearch = s
	}
	var parts []int32
	for p, o := range lk.starts[s.Topic] {
		if o.Err != nil {
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) && p < 0 {
				s.Note = "the topic does not exist"
			} else if s.Note == "" {
				s.Note = fmt.Sprintf("partition %d: %v", p, o.Err)
			}
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 && s.Note == "" {
		s.Note = "the topic does not exist"
	}
	slices.Sort(parts)
	for _, p := range parts {
		start := lk.starts[s.Topic][p].Offset
		e, ok := lk.ends.Lookup(s.Topic, p)
		if !ok || e.Err != nil {
			continue
		}
		end := e.Offset
		switch s.What {
		case SearchSource:
			start = lk.resumeAt(s.Topic, p, start)
		case SearchHint:
			h := lk.q.Hint
			if p != h.Partition {
				continue
			}
			switch {
			case h.Offset < start:
				s.Note = fmt.Sprintf("offset %d is before the log start %d: the record is gone (retention)", h.Offset, start)
				continue
			case h.Offset >= end:
				s.Note = fmt.Sprintf("offset %d is at or past the end offset %d: no such record", h.Offset, end)
				continue
			}
			start, end = h.Offset, h.Offset+1
		}
		if end < start {
			end = start
		}
		lk.windows = append(lk.windows, &window{search: s, topic: s.Topic, partition: p, start: start, from: start, end: end})
	}
	if s.What == SearchHint && !slices.Contains(parts, lk.q.Hint.Partition) && len(parts) > 0 {
		s.Note = fmt.Sprintf("the topic has no partition %d", lk.q.Hint.Partition)
	}
}

// holdsID reports whether r has an event id header of id, before the
// headers are parsed.
func holdsID(r *kgo.Record, id string) bool {
	for _, h := range r.Headers {
		if h.Key == record.HeaderEventID && bytes.Equal(h.Value, []byte(id)) {
			return true
		}
	}
	return false
}

// take keeps what r says of the event.
func (lk *lookup) take(w *window, r *kgo.Record) (stop bool) {
	s := w.search
	if s.What == SearchAuditTopic {
		row, ok, err := audit.ParseRecord(r)
		if err != nil {
			if s.Note == "" {
				s.Note = fmt.Sprintf("a record it cannot read: %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			return false
		}
		if ok && row.Source == lk.q.Source && row.EventID == lk.q.ID {
			lk.topicRows = append(lk.topicRows, row)
			s.Found++
		}
		return false
	}
	if !holdsID(r, lk.q.ID) {
		return false
	}
	ev, err := record.ParseEvent(r)
	if err != nil || ev.ID != lk.q.ID || ev.Source != lk.q.Source {
		if err == nil && s.What == SearchHint {
			s.Note = fmt.Sprintf("the record there is another event: source %q", ev.Source)
		}
		return false
	}
	f := found{kind: s.What, pos: Position{r.Topic, r.Partition, r.Offset}, ev: ev}
	s.Found++
	switch s.What {
	case SearchDLQ, SearchParked:
		f.env, f.envErr = record.ParseEnvelope(r)
		lk.letters = append(lk.letters, f)
	default:
		lk.copies = append(lk.copies, f)
		if lk.sourceOnly {
			lk.stopped = true
			return true
		}
	}
	return false
}

// report fills each search's ranges and counts from its windows.
func (lk *lookup) report(timedOut bool) {
	for _, w := range lk.windows {
		s := w.search
		s.Partitions = append(s.Partitions, Range{Partition: w.partition, Start: w.start, From: w.from, End: w.end, Next: w.next})
		s.Read += w.read
		s.InRange += w.end - w.start
		lk.a.RecordsRead += w.read
		if w.from > w.start {
			s.BoundHit = true
		}
		if w.next < w.end && !lk.stopped {
			s.TimedOut = timedOut
			if !timedOut && s.Note == "" {
				s.Note = fmt.Sprintf("nothing arrived for %s before offset %d of partition %d: gaps, not records", scanIdle, w.end, w.partition)
			}
		}
		if w.next < w.end && lk.stopped && s.Note == "" {
			s.Note = "stopped at the event's copy"
		}
	}
	for i := range lk.a.Searched {
		s := &lk.a.Searched[i]
		if s.BoundHit || s.TimedOut {
			lk.a.BoundHit = true
		}
	}
}

// finish decides the status from what run found.
func (lk *lookup) finish() {
	decide(lk)
}
