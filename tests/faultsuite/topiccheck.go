package faultsuite

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The topic checker looks at what Jepsen's Kafka checker looks at, per
// partition of the suite's topic, beside the ledger's accounting by
// identity:
//
//   - lost offsets: an acknowledgement named a Kafka position (topic,
//     partition, offset), and reading the topic back from the scenario's
//     start finds nothing there, or another event;
//   - acknowledged events that are nowhere in the topic (a LOCAL_DISK
//     acknowledgement names no offset: its event must still get there);
//   - per-key order: when a caller had A's acknowledgement before it first
//     sent B, and both have the same key, A's first record must come
//     before B's in the partition, and the sink must not write B before A;
//   - copies: an event with more than one record in the topic (a retry
//     after an answer that never came, a spool replayed after a crash),
//     counted, to show the sink absorbs them.
//
// It reads no broker and no database: the suite hands it what the callers
// saw (writeLog) and what it read back (topicRecord, sinkWrite), so its
// unit tests can construct both.

// position is where a partition holds a record.
type position struct {
	partition int32
	offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d@%d", p.partition, p.offset) }

// kafkaPosition is a position an acknowledgement named, with its topic.
type kafkaPosition struct {
	topic string
	position
}

// writeLog is what the callers saw of each identity, in the order they
// saw it: its clock ticks before each attempt is sent and after each
// acknowledgement is read, so that A acknowledged at a tick below the one
// B was first sent at means a caller had A's acknowledgement before B
// left: A happened before B. A tick taken early for a send and late for
// an acknowledgement can only hide such a pair, never make one up. Safe
// for concurrent use.
type writeLog struct {
	mu     sync.Mutex
	clock  uint64
	writes map[string]*write // by identity
}

// write is one identity as its callers saw it.
type write struct {
	// key is the partition key it was first sent or acknowledged with;
	// "": its sender does not say.
	key   string
	sent  uint64 // the tick before its first attempt; 0: its sender does not say
	acked uint64 // the tick after its first acknowledgement; 0: none
	// at are the Kafka positions its acknowledgements named: an
	// ACCEPTED event's, a DUPLICATE's original's.
	at []kafkaPosition
}

func newWriteLog() *writeLog { return &writeLog{writes: map[string]*write{}} }

func (w *writeLog) of(id string) *write {
	wr := w.writes[id]
	if wr == nil {
		wr = &write{}
		w.writes[id] = wr
	}
	return wr
}

// sending stamps identities about to be sent in one attempt, with their
// partition keys (keys[i] is ids[i]'s); an identity keeps the tick and
// the key of its first attempt.
func (w *writeLog) sending(ids, keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock++
	for i, id := range ids {
		wr := w.of(id)
		if wr.sent == 0 {
			wr.sent = w.clock
		}
		if wr.key == "" {
			wr.key = keys[i]
		}
	}
}

// acknowledged stamps id, of partition key key ("": not known),
// acknowledged (the first acknowledgement's tick is kept) and records the
// position its answer named, if any (placed).
func (w *writeLog) acknowledged(id, key string, at kafkaPosition, placed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock++
	wr := w.of(id)
	if wr.acked == 0 {
		wr.acked = w.clock
	}
	if wr.key == "" {
		wr.key = key
	}
	if placed && !slices.Contains(wr.at, at) {
		wr.at = append(wr.at, at)
	}
}

// snapshot copies the writes, for a checker that runs while no caller
// sends.
func (w *writeLog) snapshot() map[string]write {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]write, len(w.writes))
	for id, wr := range w.writes {
		out[id] = write{key: wr.key, sent: wr.sent, acked: wr.acked, at: slices.Clone(wr.at)}
	}
	return out
}

// topicRecord is a record read back from the suite's topic.
type topicRecord struct {
	position
	key      string // the record's key: the event's partition key
	identity string // source/id from its headers; "" when it has none
	value    uint64 // a hash of its value: a copy with another value is not a retry's
}

// sinkWrite is an identity's row in the sink: its partition key and when
// the consumer wrote it (one time for a batch: one transaction).
type sinkWrite struct {
	key     string
	written time.Time
}

// topicInput is what checkTopic judges: one scenario.
type topicInput struct {
	topic string          // the suite's topic, the one read back
	acked map[string]bool // identities acknowledged, as the ledger has them
	// writes are what the callers saw, by identity; an identity without
	// one takes no part in the order checks.
	writes map[string]write
	// records are every record read from the topic's end offsets when the
	// scenario began to its end once it settled; inScope picks the
	// scenario's identities among them.
	records []topicRecord
	inScope func(identity string) bool
	// sink is the sink's rows of the scenario, by identity; deadLettered
	// the identities with a DLQ or parked record, whose sink write (a
	// drain's) is after later events of their key by design.
	sink         map[string]sinkWrite
	deadLettered map[string]bool
}

// partitionTally is one partition's acknowledged offsets, and those read
// back holding the identity acknowledged.
type partitionTally struct{ acked, read int }

// topicReport is the checker's verdict on one scenario. lostOffsets,
// elsewhere, notInTopic, outOfOrder, sinkOutOfOrder and otherKey must be
// 0.
type topicReport struct {
	acked      int
	partitions map[int32]*partitionTally
	// atOffset counts the acknowledged identities whose answers named a
	// Kafka offset; lostOffsets the named offsets not read back with
	// their identity; elsewhere the positions named in another topic.
	atOffset, lostOffsets, elsewhere int
	// notInTopic counts acknowledged identities without a record.
	notInTopic int
	// records of the scenario read back; copied identities had more than
	// one; copies are the records beyond an identity's first, otherValue
	// those of them whose value no earlier record of the identity had.
	records, copied, copies, otherValue int
	// Per-key order in the topic: keys judged, identities in them,
	// happens-before pairs judged, identities whose first record comes
	// before that of one that happened before them, and keys found in
	// more than one partition (not judged).
	keys, ordered int
	pairs         int64
	outOfOrder    int
	splitKeys     int
	// otherKey counts identities whose records all carry another key than
	// the one they were sent with; mixedKeys those sent with a key not
	// known whose records carry more than one (a copy sent again under
	// another key). Neither is ordered.
	otherKey, mixedKeys int
	sinkOrdered         int
	sinkPairs           int64
	sinkOutOfOrder      int
	throughDLQ          int // sink rows left out of the sink's order: their identity went through the DLQ
	first               []string
}

// maxFirst bounds the examples a report keeps.
const maxFirst = 5

func (r *topicReport) example(format string, args ...any) {
	if len(r.first) < maxFirst {
		r.first = append(r.first, fmt.Sprintf(format, args...))
	}
}

// failures is the sum of the counts that must be 0.
func (r topicReport) failures() int {
	return r.lostOffsets + r.elsewhere + r.notInTopic + r.outOfOrder + r.sinkOutOfOrder + r.otherKey
}

// checkTopic judges one scenario's topic.
func checkTopic(in topicInput) topicReport {
	r := topicReport{acked: len(in.acked), partitions: map[int32]*partitionTally{}}
	at := make(map[position]topicRecord, len(in.records))
	// The scenario's records by identity, in the order read (each
	// partition's in offset order).
	byID := map[string][]topicRecord{}
	for _, rec := range in.records {
		at[rec.position] = rec
		if rec.identity != "" && in.inScope(rec.identity) {
			byID[rec.identity] = append(byID[rec.identity], rec)
		}
	}

	for _, id := range slices.Sorted(maps.Keys(in.acked)) {
		if len(byID[id]) == 0 {
			r.notInTopic++
			r.example("%s: acknowledged, not in %s", id, in.topic)
		}
		wr := in.writes[id]
		if len(wr.at) > 0 {
			r.atOffset++
		}
		for _, p := range wr.at {
			if p.topic != in.topic {
				r.elsewhere++
				r.example("%s: acknowledged at %s %s, not %s", id, p.topic, p.position, in.topic)
				continue
			}
			t := r.partitions[p.partition]
			if t == nil {
				t = &partitionTally{}
				r.partitions[p.partition] = t
			}
			t.acked++
			switch rec, ok := at[p.position]; {
			case ok && rec.identity == id:
				t.read++
			case ok:
				r.lostOffsets++
				r.example("%s: acknowledged at %s, which holds %q", id, p.position, rec.identity)
			default:
				r.lostOffsets++
				r.example("%s: acknowledged at %s, which no read returned", id, p.position)
			}
		}
	}

	// Copies, and each identity's first record for the order.
	keys := map[string][]orderItem{}
	keyPartition := map[string]int32{}
	split := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		recs := byID[id]
		r.records += len(recs)
		if len(recs) > 1 {
			r.copied++
			r.copies += len(recs) - 1
			seen := map[uint64]bool{}
			for _, rec := range recs {
				if len(seen) > 0 && !seen[rec.value] {
					r.otherValue++
				}
				seen[rec.value] = true
			}
		}
		for _, rec := range recs {
			if p, ok := keyPartition[rec.key]; ok && p != rec.partition {
				split[rec.key] = true
			}
			keyPartition[rec.key] = rec.partition
		}
		wr, ok := in.writes[id]
		if !ok {
			continue
		}
		// Its place is its first record under the key it was sent with: a
		// copy sent again under another key is another key's event.
		var earliest *topicRecord
		keyed := map[string]bool{}
		for i, rec := range recs {
			keyed[rec.key] = true
			if (wr.key == "" || rec.key == wr.key) && (earliest == nil || rec.offset < earliest.offset) {
				earliest = &recs[i]
			}
		}
		switch {
		case earliest == nil:
			r.otherKey++
			r.example("%s: sent with key %q, its records carry other keys", id, wr.key)
		case wr.key == "" && len(keyed) > 1:
			r.mixedKeys++
		default:
			keys[earliest.key] = append(keys[earliest.key], orderItem{id: id, at: earliest.offset, sent: wr.sent, acked: wr.acked})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		if split[key] {
			r.splitKeys++
			continue
		}
		items := keys[key]
		r.keys++
		r.ordered += len(items)
		bad, pairs, examples := outOfOrder(items)
		r.outOfOrder += bad
		r.pairs += pairs
		for _, e := range examples {
			r.example("key %q in %s: %s", key, in.topic, e)
		}
	}

	// The sink's order, by the time each row was written.
	sinkKeys := map[string][]orderItem{}
	for _, id := range slices.Sorted(maps.Keys(in.sink)) {
		row := in.sink[id]
		if in.deadLettered[id] {
			r.throughDLQ++
			continue
		}
		if wr, ok := in.writes[id]; ok {
			sinkKeys[row.key] = append(sinkKeys[row.key], orderItem{id: id, at: row.written.UnixMicro(), sent: wr.sent, acked: wr.acked})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(sinkKeys)) {
		items := sinkKeys[key]
		r.sinkOrdered += len(items)
		bad, pairs, examples := outOfOrder(items)
		r.sinkOutOfOrder += bad
		r.sinkPairs += pairs
		for _, e := range examples {
			r.example("key %q in the sink (written at µs): %s", key, e)
		}
	}
	return r
}

// orderItem is an identity in its key's order: at is its place (its first
// record's offset, or its sink row's write time), sent and acked its
// writeLog ticks (0: not known).
type orderItem struct {
	id          string
	at          int64
	sent, acked uint64
}

// outOfOrder counts the items placed before one that happened before
// them: B, with an A placed after it whose acknowledgement a caller had
// before B was first sent. Items at the same place (rows of one sink
// transaction) are not ordered. pairs counts the happens-before pairs
// judged; examples describes the first few items out of order.
func outOfOrder(items []orderItem) (bad int, pairs int64, examples []string) {
	var ackedTicks []uint64
	for _, it := range items {
		if it.acked != 0 {
			ackedTicks = append(ackedTicks, it.acked)
		}
	}
	slices.Sort(ackedTicks)
	for _, it := range items {
		if it.sent != 0 {
			// An item's own acknowledgement comes after its send: it is
			// never counted against itself.
			pairs += int64(sort.Search(len(ackedTicks), func(i int) bool { return ackedTicks[i] >= it.sent }))
		}
	}

	// From the last place to the first: the earliest acknowledgement
	// among the items placed after the ones at hand.
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b orderItem) int { return cmp.Compare(b.at, a.at) })
	var earliest *orderItem
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j].at == sorted[i].at {
			j++
		}
		for _, b := range sorted[i:j] {
			if b.sent != 0 && earliest != nil && earliest.acked < b.sent {
				bad++
				if len(examples) < maxFirst {
					examples = append(examples, fmt.Sprintf("%s at %d before %s at %d, acknowledged (tick %d) before %s was first sent (tick %d)",
						b.id, b.at, earliest.id, earliest.at, earliest.acked, b.id, b.sent))
				}
			}
		}
		for k := i; k < j; k++ {
			if a := sorted[k]; a.acked != 0 && (earliest == nil || a.acked < earliest.acked) {
				earliest = &sorted[k]
			}
		}
		i = j
	}
	return bad, pairs, examples
}

// String is the scenario's line of what the checker verified.
func (r topicReport) String() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(r.partitions)) {
		t := r.partitions[p]
		parts = append(parts, fmt.Sprintf("p%d %d/%d", p, t.read, t.acked))
	}
	return fmt.Sprintf("acked %d, at an offset %d, read back per partition [%s], lost offsets %d, elsewhere %d, not in the topic %d; "+
		"records %d, copied %d (copies %d, with another value %d); per-key order in the topic: %d keys, %d events, %d pairs, out of order %d, split keys %d, under another key %d, mixed keys %d; "+
		"in the sink: %d events, %d pairs, out of order %d, through the DLQ %d",
		r.acked, r.atOffset, strings.Join(parts, " "), r.lostOffsets, r.elsewhere, r.notInTopic,
		r.records, r.copied, r.copies, r.otherValue, r.keys, r.ordered, r.pairs, r.outOfOrder, r.splitKeys, r.otherKey, r.mixedKeys,
		r.sinkOrdered, r.sinkPairs, r.sinkOutOfOrder, r.throughDLQ)
}
