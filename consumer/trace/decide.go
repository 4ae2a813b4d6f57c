package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// settled returns the latest decision of rows that places the event (an
// action this package knows) and whether rows settle where it is: a
// written row (the sink keeps the first write, whatever follows), or a
// latest decision that is dead_lettered, retried or parked. A latest
// replayed row leaves the event in its source topic, to be consumed.
func settled(rows []audit.Row) (last *audit.Row, final bool) {
	for i := range rows {
		switch rows[i].Action {
		case audit.Written:
			final = true
			last = &rows[i]
		case audit.DeadLettered, audit.Retried, audit.Parked, audit.Replayed:
			last = &rows[i]
		}
	}
	if final {
		return last, true
	}
	return last, last != nil && last.Action != audit.Replayed
}

func firstRow(rows []audit.Row, action audit.Action) *audit.Row {
	for i := range rows {
		if rows[i].Action == action {
			return &rows[i]
		}
	}
	return nil
}

func lastRow(rows []audit.Row, action audit.Action) *audit.Row {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Action == action {
			return &rows[i]
		}
	}
	return nil
}

func countRows(rows []audit.Row, action audit.Action) int {
	n := 0
	for _, r := range rows {
		if r.Action == action {
			n++
		}
	}
	return n
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// positionOf is the row's record, nil when it names none.
func positionOf(r *audit.Row) *Position {
	if r.Topic == "" {
		return nil
	}
	return &Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

func rowNote(r *audit.Row) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch r.Action {
	case audit.Written:
		if r.Sink != "" {
			add("sink %s", r.Sink)
		}
	case audit.DeadLettered, audit.Parked:
		if r.Action == audit.Parked && r.Detail != "" {
			add("%s", r.Detail)
		}
		if r.Class != "" {
			add("%s: %s", r.Class, oneLine(r.Error, 120))
		}
		if r.Attempt > 0 {
			add("attempt %d", r.Attempt)
		}
		if r.Retryable {
			add("retryable")
		}
	default:
		if r.Detail != "" {
			add("%s", r.Detail)
		}
	}
	if r.ReplayID != "" {
		add("replay %s by %s", r.ReplayID, r.Actor)
	}
	return strings.Join(parts, ", ")
}

// oneLine folds s to one line of at most n bytes (clip.String).
func oneLine(s string, n int) string {
	return clip.String(strings.Join(strings.Fields(s), " "), n)
}

// topicRows are the rows read from record.AuditTopic as a table holds
// them: the first of each decision (the topic is written at least once),
// in time order (an event's records share a partition, but rows may come
// from a topic of several partitions), numbered from 1.
func topicRows(rows []audit.Row) []audit.Row {
	seen := make(map[audit.Key]bool, len(rows))
	out := rows[:0]
	for _, r := range rows {
		if k := r.Key(); !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y audit.Row) int { return x.At.Compare(y.At) })
	for i := range out {
		out[i].Sequence = int64(i + 1)
	}
	return out
}

// besideTable is the audit table's rows with those read from
// record.AuditTopic that it does not hold (the consumer recorded them
// there while the table did not take them), the first of each decision,
// with Sequence 0, all in time order.
func besideTable(table, topic []audit.Row) []audit.Row {
	if len(topic) == 0 {
		return table
	}
	held := make(map[audit.Key]bool, len(table)+len(topic))
	for i := range table {
		held[table[i].Key()] = true
	}
	out := slices.Clone(table)
	for _, r := range topic {
		if k := r.Key(); !held[k] {
			held[k] = true
			r.Sequence = 0
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y audit.Row) int { return x.At.Compare(y.At) })
	return out
}

// decide sets the lookup's status and answer from what it found, and
// then its trace id.
func decide(lk *lookup) {
	lk.decideStatus()
	lk.fallbackTraceID()
}

// fallbackTraceID sets a TraceID the status did not: the newest row's
// that has one, else the newest record's found.
func (lk *lookup) fallbackTraceID() {
	a := lk.a
	for i := len(lk.rows) - 1; i >= 0 && a.TraceID == ""; i-- {
		a.TraceID = lk.rows[i].TraceID
	}
	var newest *found
	for _, fs := range [][]found{lk.letters, lk.copies} {
		for i := range fs {
			f := &fs[i]
			if tracing.TraceIDOf(f.ev.Traceparent) != "" && (newest == nil || f.ev.IngestedAt.After(newest.ev.IngestedAt)) {
				newest = f
			}
		}
	}
	if a.TraceID == "" && newest != nil {
		a.TraceID = tracing.TraceIDOf(newest.ev.Traceparent)
	}
}

func (lk *lookup) decideStatus() {
	a := lk.a
	switch {
	case lk.rowsFrom == "" && len(lk.topicRows) > 0:
		lk.rowsFrom = FromAuditTopic
		lk.rows = topicRows(lk.topicRows)
	case lk.rowsFrom == FromAuditTable:
		lk.rows = besideTable(lk.rows, lk.topicRows)
	}
	rows := lk.rows
	for i := range rows {
		if !audit.ValidTraceID(rows[i].TraceID) { // a table written by hand
			rows[i].TraceID = ""
		}
		from := lk.rowsFrom
		if from == FromAuditTable && rows[i].Sequence == 0 {
			from = FromAuditTopic
		}
		a.Audit = append(a.Audit, rowOf(rows[i]))
		a.Path = append(a.Path, Step{At: rows[i].At.UTC(), Step: string(rows[i].Action), Where: positionOf(&rows[i]),
			From: from, Note: rowNote(&rows[i])})
	}
	lk.stepsOfRecords()
	slices.SortStableFunc(a.Path, func(x, y Step) int { return x.At.Compare(y.At) })

	if w := firstRow(rows, audit.Written); w != nil {
		lk.inSink(w)
		return
	}
	last, _ := settled(rows)
	if last != nil {
		switch last.Action {
		case audit.DeadLettered, audit.Retried:
			lk.inDLQFromRows(last)
			return
		case audit.Parked:
			lk.parkedFromRow(last)
			return
		}
	}
	if c := lk.pendingCopy(); c != nil {
		lk.pending(c, last)
		return
	}
	if last != nil && last.Action == audit.Replayed {
		lk.pending(nil, last)
		return
	}
	if f := lk.latestLetter(); f != nil {
		lk.fromLetter(f)
		return
	}
	lk.unknown()
}

// stepsOfRecords adds the path steps of the records the scan found: each
// dead letter, and each copy's publication (accepted), once per source
// record.
func (lk *lookup) stepsOfRecords() {
	a := lk.a
	accepted := map[Position]bool{}
	addAccepted := func(at time.Time, pos Position, from, note string) {
		if accepted[pos] {
			return
		}
		accepted[pos] = true
		a.Path = append(a.Path, Step{At: at.UTC(), Step: "accepted", Where: &pos, From: from, Note: note})
	}
	for _, f := range lk.letters {
		pos := f.pos
		step := Step{Where: &pos, From: FromScan}
		switch {
		case f.envErr != nil:
			step.Step, step.Note = "dead_lettered", "envelope unreadable: "+f.envErr.Error()
			step.At = f.ev.IngestedAt.UTC()
		default:
			step.At = f.env.LastFailureAt
			step.Step = "dead_lettered"
			if f.kind == SearchParked {
				step.Step = "parked"
			}
			var note []string
			if f.env.ParkedReason != "" {
				note = append(note, f.env.ParkedReason)
			}
			note = append(note, fmt.Sprintf("%s: %s", f.env.Class, oneLine(f.env.Error, 120)),
				fmt.Sprintf("%d attempts, dlq_retries %d", f.env.Attempts, f.env.DLQRetries))
			step.Note = strings.Join(note, ", ")
			addAccepted(f.ev.IngestedAt, Position{f.env.SourceTopic, f.env.SourcePartition, f.env.SourceOffset}, FromScan, "")
		}
		a.Path = append(a.Path, step)
	}
	for _, c := range lk.copies {
		from := FromScan
		if c.kind == SearchHint {
			from = FromHint
		}
		start := int64(0)
		if o, ok := lk.starts.Lookup(c.pos.Topic, c.pos.Partition); ok {
			start = o.Offset
		}
		committed := lk.resumeAt(c.pos.Topic, c.pos.Partition, start)
		note := fmt.Sprintf("past the group's committed offset %d", committed)
		if c.pos.Offset < committed {
			note = fmt.Sprintf("before the group's committed offset %d: consumed", committed)
		}
		addAccepted(c.ev.IngestedAt, c.pos, from, note)
	}
}

func (lk *lookup) inSink(w *audit.Row) {
	a := lk.a
	a.Status = InSink
	from := Position{}
	if p := positionOf(w); p != nil {
		from = *p
	}
	a.Written = &Written{At: w.At.UTC(), Sink: w.Sink, Group: w.Group, From: from, ReplayID: w.ReplayID, Actor: w.Actor}
	a.TraceID = w.TraceID
	where := "the sink"
	if w.Sink != "" {
		where = "sink " + w.Sink
	}
	var b strings.Builder
	fmt.Fprintf(&b, "written to %s at %s from %s", where, stamp(w.At), from)
	if w.ReplayID != "" {
		fmt.Fprintf(&b, " (replay %s by %s)", w.ReplayID, w.Actor)
	}
	later := 0
	for i := range lk.rows {
		if &lk.rows[i] == w {
			later = len(lk.rows) - i - 1
		}
	}
	if later > 0 {
		fmt.Fprintf(&b, "; %d later audit rows: the sink keeps the first write of an identity", later)
	}
	a.Summary = b.String()
}

// inDLQFromRows is IN_DLQ from the audit rows, last being dead_lettered
// or retried.
func (lk *lookup) inDLQFromRows(last *audit.Row) {
	a := lk.a
	a.Status = InDLQ
	a.TraceID = last.TraceID
	dl := lastRow(lk.rows, audit.DeadLettered)
	if dl == nil {
		dl = last
	}
	source := record.SourceOf(dl.Topic)
	d := &DeadLetter{Topic: record.DLQTopic(source), At: dl.At.UTC(), Class: dl.Class, Error: dl.Error,
		Retryable: dl.Retryable, Attempts: dl.Attempt, DLQRetries: countRows(lk.rows, audit.Retried), Sink: dl.Sink, Group: dl.Group}
	if dl.Action == audit.Retried {
		// A retried row alone: the dead letter it was taken from is
		// retryable, or no drain would have taken it.
		d.Retryable = true
	}
	if first := firstRow(lk.rows, audit.DeadLettered); first != nil {
		d.FirstFailureAt = first.At.UTC()
		if first.Topic != "" && !record.IsDerived(first.Topic) {
			d.Source = positionOf(first)
		}
	}
	if last.Action == audit.Retried {
		d.Note = fmt.Sprintf("a drain pass took it from the DLQ at %s; no outcome is recorded yet", stamp(last.At))
		// The retried row does not count a failed drain until its
		// outcome comes.
		d.DLQRetries--
	}
	d.DLQRetries = max(d.DLQRetries, 0)
	if f := lk.latestLetter(); f != nil && f.kind == SearchDLQ {
		d.Record = &f.pos
	}
	d.Next = lk.nextDrain(d)
	a.DeadLetter = d
	a.Summary = lk.dlqSummary(d)
}

func (lk *lookup) dlqSummary(d *DeadLetter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dead-lettered to %s at %s", d.Topic, stamp(d.At))
	if d.Class != "" {
		fmt.Fprintf(&b, ": %s", d.Class)
	}
	retry := "not retryable"
	if d.Retryable {
		retry = "retryable"
	}
	fmt.Fprintf(&b, " (%s), %d attempts, %d failed drains", retry, d.Attempts, d.DLQRetries)
	if d.Note != "" {
		fmt.Fprintf(&b, "; %s", d.Note)
	}
	if d.Next != nil {
		fmt.Fprintf(&b, "; next: %s", d.Next.Text)
	}
	return b.String()
}

// nextDrain is when a drain tries d again, by the consumer's dlq block.
func (lk *lookup) nextDrain(d *DeadLetter) *NextDrain {
	cfg := lk.t.dlq
	if !d.Retryable {
		return &NextDrain{Text: fmt.Sprintf("drains skip it (not retryable): it stays in %s until an operator replays it (sluice dlq replay --topic %s --source %s)",
			d.Topic, d.Topic, lk.q.Source)}
	}
	n := &NextDrain{Retried: true, Every: cfg.DrainInterval.String(), RetriesLeft: max(cfg.MaxRetries-d.DLQRetries, 0)}
	if !d.FirstFailureAt.IsZero() {
		n.ParksAfter = d.FirstFailureAt.Add(cfg.Deadline)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "at the next drain pass (one starts every %s once the sink has been healthy that long and the last pass is over)", cfg.DrainInterval)
	if d.DLQRetries > 0 && !d.At.IsZero() {
		n.NotBefore = d.At.Add(cfg.DrainInterval)
		fmt.Fprintf(&b, ", not before %s", stamp(n.NotBefore))
	}
	switch {
	case n.RetriesLeft == 0:
		fmt.Fprintf(&b, "; a failure there parks it (dlq.max_retries %d reached)", cfg.MaxRetries)
	case !n.ParksAfter.IsZero() && lk.t.o.now().After(n.ParksAfter):
		fmt.Fprintf(&b, "; a failure there parks it (past its deadline %s)", stamp(n.ParksAfter))
	default:
		fmt.Fprintf(&b, "; back to the DLQ on up to %d more failures, then parked", n.RetriesLeft)
		if !n.ParksAfter.IsZero() {
			fmt.Fprintf(&b, ", and parked at any failure after %s (dlq.deadline %s)", stamp(n.ParksAfter), cfg.Deadline)
		}
	}
	n.Text = b.String()
	return n
}

func (lk *lookup) parkedFromRow(p *audit.Row) {
	a := lk.a
	a.Status = Parked
	a.TraceID = p.TraceID
	source := record.SourceOf(p.Topic)
	d := &DeadLetter{Topic: record.ParkedTopic(source), At: p.At.UTC(), Class: p.Class, Error: p.Error,
		Retryable: p.Retryable, Attempts: p.Attempt, DLQRetries: countRows(lk.rows, audit.Retried),
		Sink: p.Sink, Group: p.Group, ParkedReason: p.Detail}
	if first := firstRow(lk.rows, audit.DeadLettered); first != nil {
		d.FirstFailureAt = first.At.UTC()
		if first.Topic != "" && !record.IsDerived(first.Topic) {
			d.Source = positionOf(first)
		}
	}
	if p.Topic != "" && strings.HasSuffix(p.Topic, record.ParkedSuffix) {
		d.Record = positionOf(p)
	} else if f := lk.latestLetter(); f != nil && f.kind == SearchParked {
		d.Record = &f.pos
	}
	a.DeadLetter = d
	a.Summary = lk.parkedSummary(d)
}

func (lk *lookup) parkedSummary(d *DeadLetter) string {
	reason := d.ParkedReason
	if reason == "" {
		reason = "no reason recorded"
	}
	return fmt.Sprintf("parked in %s at %s (%s): it waits for an operator (sluice dlq replay --topic %s --source %s)",
		d.Topic, stamp(d.At), reason, d.Topic, lk.q.Source)
}

// pendingCopy is the first copy found in a source topic at or past the
// group's committed offset, nil when there is none.
func (lk *lookup) pendingCopy() *found {
	for i := range lk.copies {
		c := &lk.copies[i]
		start := int64(0)
		if o, ok := lk.starts.Lookup(c.pos.Topic, c.pos.Partition); ok {
			start = o.Offset
		}
		if c.pos.Offset >= lk.resumeAt(c.pos.Topic, c.pos.Partition, start) {
			return c
		}
	}
	return nil
}

// pending is PENDING with copy c, or with none found after replay, the
// latest audit row.
func (lk *lookup) pending(c *found, replay *audit.Row) {
	a := lk.a
	a.Status = Pending
	p := &PendingAt{Group: lk.t.group}
	if c == nil {
		a.TraceID = replay.TraceID
		dest := record.SourceOf(replay.Topic)
		p.Note = fmt.Sprintf("replayed at %s (replay %s by %s) to %s; the copy was not found past the group's committed offsets",
			stamp(replay.At), replay.ReplayID, replay.Actor, dest)
		if lk.a.BoundHit {
			p.Note += " within the limits"
		}
		a.Pending = p
		a.Summary = p.Note
		return
	}
	start := int64(0)
	if o, ok := lk.starts.Lookup(c.pos.Topic, c.pos.Partition); ok {
		start = o.Offset
	}
	a.TraceID = tracing.TraceIDOf(c.ev.Traceparent)
	pos := c.pos
	p.Record = &pos
	p.IngestedAt = c.ev.IngestedAt.UTC()
	p.Committed = lk.resumeAt(pos.Topic, pos.Partition, start)
	if e, ok := lk.ends.Lookup(pos.Topic, pos.Partition); ok {
		p.End = e.Offset
	}
	p.Lag = max(p.End-p.Committed, 0)
	p.Ahead = max(pos.Offset-p.Committed, 0)
	if replay != nil {
		p.Note = fmt.Sprintf("replayed at %s (replay %s by %s)", stamp(replay.At), replay.ReplayID, replay.Actor)
	}
	a.Pending = p
	a.Summary = fmt.Sprintf("in %s, not yet consumed: %d records ahead of it past group %s's committed offset %d (partition lag %d)",
		pos, p.Ahead, p.Group, p.Committed, p.Lag)
	if p.Note != "" {
		a.Summary += "; " + p.Note
	}
}

// latestLetter is the event's newest dead letter found: by last failure,
// then a parked record over a DLQ one, then dlq_retries.
func (lk *lookup) latestLetter() *found {
	if len(lk.letters) == 0 {
		return nil
	}
	rank := func(f *found) int {
		if f.kind == SearchParked {
			return 1
		}
		return 0
	}
	best := &lk.letters[0]
	for i := 1; i < len(lk.letters); i++ {
		f := &lk.letters[i]
		c := cmp.Or(f.env.LastFailureAt.Compare(best.env.LastFailureAt), cmp.Compare(rank(f), rank(best)),
			cmp.Compare(f.env.DLQRetries, best.env.DLQRetries))
		if c > 0 {
			best = f
		}
	}
	return best
}

// cutSearch reports whether a search of what was cut by the limits or by
// gaps, so that a newer record may have been missed.
func (lk *lookup) cutSearch(what ...string) bool {
	for _, s := range lk.a.Searched {
		if slices.Contains(what, s.What) {
			for _, r := range s.Partitions {
				if r.From > r.Start || r.Next < r.End {
					return true
				}
			}
		}
	}
	return false
}

// fromLetter is the status of f, the event's newest dead letter found,
// without audit rows.
func (lk *lookup) fromLetter(f *found) {
	a := lk.a
	a.TraceID = tracing.TraceIDOf(f.ev.Traceparent)
	pos := f.pos
	d := &DeadLetter{Topic: pos.Topic, Record: &pos}
	if f.envErr != nil {
		d.Note = "its envelope does not parse (" + f.envErr.Error() + "); a drain parks it as unreadable_envelope"
	} else {
		e := f.env
		d.At, d.FirstFailureAt = e.LastFailureAt, e.FirstFailureAt
		d.Class, d.Error, d.Retryable, d.Attempts, d.DLQRetries = e.Class, e.Error, e.Retryable, e.Attempts, e.DLQRetries
		d.Sink, d.Group, d.ParkedReason = e.Sink, e.Group, e.ParkedReason
		d.Source = &Position{e.SourceTopic, e.SourcePartition, e.SourceOffset}
	}
	a.DeadLetter = d
	if f.kind == SearchParked {
		a.Status = Parked
		a.Summary = lk.parkedSummary(d)
		return
	}
	committed, ok := lk.committed.Lookup(pos.Topic, pos.Partition)
	past := ok && committed.Err == nil && committed.At > pos.Offset
	if past && d.Retryable {
		// A drain pass finished the record: written, or sent back to the
		// DLQ or parked, which would be a newer dead letter.
		if !lk.cutSearch(SearchDLQ, SearchParked) {
			a.Status = InSink
			a.DeadLetter = nil
			a.Written = &Written{From: pos, Inferred: true, Sink: d.Sink, Group: d.Group,
				Note: fmt.Sprintf("no audit row: group %s committed past its dead letter %s (retryable) and no newer dead letter holds it, so a drain pass wrote it", lk.t.group, pos)}
			a.Summary = "written to the sink by a drain pass (inferred): " + a.Written.Note
			return
		}
		d.Note = fmt.Sprintf("group %s committed past this dead letter: a drain pass took it, but the search of the DLQ and parked topics was cut, so a newer dead letter may hold it", lk.t.group)
	}
	a.Status = InDLQ
	d.Next = lk.nextDrain(d)
	a.Summary = lk.dlqSummary(d)
}

func (lk *lookup) unknown() {
	a := lk.a
	a.Status = Unknown
	var searched []string
	for _, s := range a.Searched {
		switch s.What {
		case SearchAuditTable:
			searched = append(searched, "the audit table")
		case SearchHint:
			part := fmt.Sprintf("%s at the hint", s.Topic)
			if s.Note != "" {
				part += " (" + s.Note + ")"
			}
			searched = append(searched, part)
		default:
			part := fmt.Sprintf("%s (%d records", s.Topic, s.Read)
			if s.What == SearchSource {
				part += " past the committed offsets"
			}
			if s.Note == "the topic does not exist" {
				part = s.Topic + " (does not exist"
			}
			searched = append(searched, part+")")
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "not found in %s", strings.Join(searched, ", "))
	for _, c := range lk.copies {
		if c.pos.Offset < lk.resumeAt(c.pos.Topic, c.pos.Partition, 0) {
			fmt.Fprintf(&b, "; its record %s was consumed (group %s committed past it) but nothing says where it went", c.pos, lk.t.group)
		}
	}
	if a.BoundHit {
		fmt.Fprintf(&b, "; the limits cut the search (max_records %d, timeout %s)", lk.lim.MaxRecords, lk.lim.Timeout)
	}
	a.Summary = b.String()
}
