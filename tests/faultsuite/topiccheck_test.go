package faultsuite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

// The topic checker on constructed scenarios: each breaks one property,
// and its count must say so; the clean one must count nothing.

const checkTopicName = "t.logs"

// topicCase builds a checker input: events a..e of key k in partition 0,
// each sent and acknowledged in turn (a before b before c ...), at
// offsets 0..4, written to the sink in that order.
type topicCase struct{ in topicInput }

func newTopicCase() *topicCase {
	in := topicInput{
		topic:        checkTopicName,
		acked:        map[string]bool{},
		writes:       map[string]write{},
		inScope:      func(id string) bool { return strings.HasPrefix(id, "s/") },
		sink:         map[string]sinkWrite{},
		deadLettered: map[string]bool{},
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		id := "s/" + name
		in.acked[id] = true
		in.writes[id] = write{key: "k", sent: uint64(2*i + 1), acked: uint64(2*i + 2),
			at: []kafkaPosition{{topic: checkTopicName, position: position{0, int64(i)}}}}
		in.records = append(in.records, topicRecord{position: position{0, int64(i)}, key: "k", identity: id, value: uint64(i)})
		in.sink[id] = sinkWrite{key: "k", written: base.Add(time.Duration(i) * time.Millisecond)}
	}
	return &topicCase{in: in}
}

// swapRecords exchanges where two identities' records are, and the
// positions their answers named.
func (c *topicCase) swapRecords(a, b string) {
	var ia, ib int
	for i, rec := range c.in.records {
		switch rec.identity {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	c.in.records[ia].identity, c.in.records[ib].identity = c.in.records[ib].identity, c.in.records[ia].identity
	c.in.records[ia].value, c.in.records[ib].value = c.in.records[ib].value, c.in.records[ia].value
	wa, wb := c.in.writes[a], c.in.writes[b]
	wa.at, wb.at = wb.at, wa.at // the answers named where each landed
	c.in.writes[a], c.in.writes[b] = wa, wb
}

func TestCheckTopic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *topicCase)
		want   func(r topicReport) bool
		// failing: the report must count a failure (failures() > 0).
		failing bool
	}{
		{
			name:   "clean",
			change: func(c *topicCase) {},
			want: func(r topicReport) bool {
				// 10 pairs: each of a..e happened before every later one.
				return r.atOffset == 5 && r.partitions[0].read == 5 && r.records == 5 && r.copies == 0 &&
					r.keys == 1 && r.ordered == 5 && r.pairs == 10 && r.sinkOrdered == 5 && r.sinkPairs == 10
			},
		},
		{
			name: "lost offset: the acknowledged offset is past the partition's end",
			change: func(c *topicCase) {
				c.in.records = c.in.records[:4] // e's record at 0@4 never read
			},
			want:    func(r topicReport) bool { return r.lostOffsets == 1 && r.notInTopic == 1 && r.partitions[0].read == 4 },
			failing: true,
		},
		{
			name: "lost offset: another event holds the acknowledged offset",
			change: func(c *topicCase) {
				// c was acknowledged at 0@2; 0@2 holds x, c is at 0@5.
				c.in.records[2].identity = "s/x"
				c.in.records = append(c.in.records, topicRecord{position: position{0, 5}, key: "k", identity: "s/c", value: 2})
			},
			want:    func(r topicReport) bool { return r.lostOffsets == 1 && r.notInTopic == 0 },
			failing: true,
		},
		{
			name: "acknowledged to the spool, never published",
			change: func(c *topicCase) {
				c.in.acked["s/f"] = true
				c.in.writes["s/f"] = write{sent: 20, acked: 21} // LOCAL_DISK: no offset named
			},
			want:    func(r topicReport) bool { return r.notInTopic == 1 && r.lostOffsets == 0 },
			failing: true,
		},
		{
			name: "acknowledged in another topic",
			change: func(c *topicCase) {
				w := c.in.writes["s/a"]
				w.at = append(w.at, kafkaPosition{topic: "other", position: position{0, 0}})
				c.in.writes["s/a"] = w
			},
			want:    func(r topicReport) bool { return r.elsewhere == 1 },
			failing: true,
		},
		{
			name: "out of order in the topic: d's record before b's, b acknowledged before d was sent",
			change: func(c *topicCase) {
				c.swapRecords("s/b", "s/d")
			},
			// The partition holds a, d, c, b, e: d and c each come before
			// b, which was acknowledged before either was sent.
			want:    func(r topicReport) bool { return r.outOfOrder == 2 && r.sinkOutOfOrder == 0 && r.lostOffsets == 0 },
			failing: true,
		},
		{
			name: "concurrent events in either order",
			change: func(c *topicCase) {
				// b sent before a was acknowledged: no order between them.
				c.in.writes["s/a"] = write{sent: 1, acked: 4, at: c.in.writes["s/a"].at}
				c.in.writes["s/b"] = write{sent: 3, acked: 4, at: c.in.writes["s/b"].at}
				c.swapRecords("s/a", "s/b")
				c.in.sink["s/a"], c.in.sink["s/b"] = c.in.sink["s/b"], c.in.sink["s/a"]
			},
			want: func(r topicReport) bool { return r.outOfOrder == 0 && r.sinkOutOfOrder == 0 && r.pairs == 9 },
		},
		{
			name: "events of other keys are not ordered against each other",
			change: func(c *topicCase) {
				c.in.records[1].key, c.in.records[1].partition = "k2", 1
				c.in.records[3].key, c.in.records[3].partition = "k2", 1
				c.in.records[1].offset, c.in.records[3].offset = 1, 0
				wb, wd := c.in.writes["s/b"], c.in.writes["s/d"]
				wb.at, wd.at = []kafkaPosition{{topic: checkTopicName, position: position{1, 1}}}, []kafkaPosition{{topic: checkTopicName, position: position{1, 0}}}
				wb.key, wd.key = "k2", "k2"
				c.in.writes["s/b"], c.in.writes["s/d"] = wb, wd
			},
			// k2: d at 1@0 before b at 1@1, b acknowledged before d was sent.
			want:    func(r topicReport) bool { return r.keys == 2 && r.outOfOrder == 1 && r.partitions[1].read == 2 },
			failing: true,
		},
		{
			name: "a copy sent again under another key is not that key's event",
			change: func(c *topicCase) {
				// b again, later, under key k2 (another partition), with
				// another payload, after z, sent after b's acknowledgement:
				// k2's order does not place b there. Read first, as a
				// consumer may return another partition first.
				c.in.records = append([]topicRecord{
					{position: position{1, 0}, key: "k2", identity: "s/z", value: 50},
					{position: position{1, 1}, key: "k2", identity: "s/b", value: 51},
				}, c.in.records...)
				c.in.writes["s/z"] = write{key: "k2", sent: 11, acked: 12}
			},
			want: func(r topicReport) bool {
				return r.outOfOrder == 0 && r.keys == 2 && r.ordered == 6 && r.copies == 1 && r.otherValue == 1
			},
		},
		{
			name: "published under another key than it was sent with",
			change: func(c *topicCase) {
				c.in.records[2].key = "k9"
			},
			want:    func(r topicReport) bool { return r.otherKey == 1 && r.ordered == 4 },
			failing: true,
		},
		{
			name: "a copy under another key, its sender not saying which",
			change: func(c *topicCase) {
				w := c.in.writes["s/b"]
				w.key = ""
				c.in.writes["s/b"] = w
				c.in.records = append(c.in.records, topicRecord{position: position{1, 0}, key: "k2", identity: "s/b", value: 1})
			},
			want: func(r topicReport) bool { return r.mixedKeys == 1 && r.ordered == 4 && r.outOfOrder == 0 },
		},
		{
			name: "a key in two partitions is not judged",
			change: func(c *topicCase) {
				c.in.records[4].partition = 1
				c.in.writes["s/e"] = write{sent: 9, acked: 10, at: []kafkaPosition{{topic: checkTopicName, position: position{1, 4}}}}
			},
			want: func(r topicReport) bool { return r.splitKeys == 1 && r.keys == 0 && r.outOfOrder == 0 },
		},
		{
			name: "out of order in the sink: c written before b",
			change: func(c *topicCase) {
				c.in.sink["s/b"], c.in.sink["s/c"] = c.in.sink["s/c"], c.in.sink["s/b"]
			},
			want:    func(r topicReport) bool { return r.sinkOutOfOrder == 1 && r.outOfOrder == 0 },
			failing: true,
		},
		{
			name: "one sink transaction holds b and c: not ordered",
			change: func(c *topicCase) {
				c.in.sink["s/c"] = c.in.sink["s/b"]
			},
			want: func(r topicReport) bool { return r.sinkOutOfOrder == 0 },
		},
		{
			name: "a dead letter drained after later events of its key",
			change: func(c *topicCase) {
				c.in.sink["s/b"] = sinkWrite{key: "k", written: c.in.sink["s/e"].written.Add(time.Second)}
				c.in.deadLettered["s/b"] = true
			},
			want: func(r topicReport) bool { return r.sinkOutOfOrder == 0 && r.throughDLQ == 1 && r.sinkOrdered == 4 },
		},
		{
			name: "a retry's copy and a copy with another value",
			change: func(c *topicCase) {
				c.in.records = append(c.in.records,
					topicRecord{position: position{0, 5}, key: "k", identity: "s/b", value: 1},
					topicRecord{position: position{0, 6}, key: "k", identity: "s/c", value: 99})
			},
			want: func(r topicReport) bool {
				return r.records == 7 && r.copied == 2 && r.copies == 2 && r.otherValue == 1 && r.outOfOrder == 0
			},
		},
		{
			name: "records of other scenarios are not counted",
			change: func(c *topicCase) {
				c.in.records = append(c.in.records, topicRecord{position: position{0, 5}, key: "k", identity: "other/a", value: 1},
					topicRecord{position: position{0, 6}, key: "k", identity: "other/a", value: 1})
			},
			want: func(r topicReport) bool { return r.records == 5 && r.copies == 0 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTopicCase()
			tc.change(c)
			r := checkTopic(c.in)
			if !tc.want(r) {
				t.Errorf("report: %v; examples %q", r, r.first)
			}
			if failing := r.failures() > 0; failing != tc.failing {
				t.Errorf("failures %d, want a failure %v: %v; examples %q", r.failures(), tc.failing, r, r.first)
			}
			if tc.failing && len(r.first) == 0 {
				t.Errorf("a failure without an example: %v", r)
			}
		})
	}
}

func TestWriteLog(t *testing.T) {
	w := newWriteLog()
	at := kafkaPosition{topic: checkTopicName, position: position{1, 7}}
	w.sending([]string{"s/a", "s/b"}, []string{"k", "k"}) // tick 1
	w.sending([]string{"s/a"}, []string{"k2"})            // tick 2: a's retry (a key it does not keep)
	w.acknowledged("s/a", "k", at, true)                  // tick 3
	w.acknowledged("s/a", "k", at, true)                  // tick 4: a DUPLICATE naming the same original
	w.acknowledged("s/b", "k", kafkaPosition{}, false)    // tick 5: LOCAL_DISK
	w.sending([]string{"s/c"}, []string{""})              // tick 6
	w.acknowledged("s/c", "k3", kafkaPosition{}, false)   // tick 7
	got := w.snapshot()
	if a := got["s/a"]; a.key != "k" || a.sent != 1 || a.acked != 3 || len(a.at) != 1 || a.at[0] != at {
		t.Errorf("a: %+v; want key k, sent 1, acked 3, at [%v]", a, at)
	}
	if b := got["s/b"]; b.sent != 1 || b.acked != 5 || len(b.at) != 0 {
		t.Errorf("b: %+v; want sent 1, acked 5, no position", b)
	}
	if c := got["s/c"]; c.key != "k3" || c.sent != 6 || c.acked != 7 {
		t.Errorf("c: %+v; want key k3 from its acknowledgement, sent 6, acked 7", c)
	}
	// a happened before c; b did not happen before a (sent before a's
	// acknowledgement).
	if !(got["s/a"].acked < got["s/c"].sent) || got["s/b"].acked < got["s/a"].sent {
		t.Errorf("happens-before from the ticks: %+v", got)
	}
}

// TestTopicReadBack runs the checker on records produced to kfake and read
// back as the suite reads its topic: a record from before the scenario's
// start is not read, an acknowledged offset holding its event is read
// back, a retry's copy is counted, an acknowledged offset past the
// partition's end is lost.
func TestTopicReadBack(t *testing.T) {
	const topic = "suite.logs"
	c := kafkatest.Fake(t, 2, []string{topic})
	s := &system{t: t, brokers: c.ListenAddrs(), topic: topic}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(partition int32, key, source, id, value string) position {
		t.Helper()
		rec := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(key), Value: []byte(value),
			Headers: []kgo.RecordHeader{{Key: record.HeaderEventID, Value: []byte(id)}, {Key: record.HeaderSource, Value: []byte(source)}}}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return position{rec.Partition, rec.Offset}
	}
	produce(0, "k", "s", "before", "v0") // an earlier scenario's
	from := s.endOffsets(topic)

	w, acked := newWriteLog(), map[string]bool{}
	ack := func(id string, at position) {
		acked[id] = true
		w.acknowledged(id, "", kafkaPosition{topic: topic, position: at}, true)
	}
	w.sending([]string{"s/a"}, []string{"k"})
	ack("s/a", produce(0, "k", "s", "a", "va"))
	produce(0, "k", "s", "a", "va") // a retry's copy
	w.sending([]string{"s/b"}, []string{"k1"})
	ack("s/b", produce(1, "k1", "s", "b", "vb"))
	ack("s/c", position{1, 7}) // past partition 1's end

	recs := s.topicRecords(from)
	r := checkTopic(topicInput{topic: topic, acked: acked, writes: w.snapshot(), records: recs,
		inScope: func(id string) bool { return strings.HasPrefix(id, "s/") }})
	if len(recs) != 3 || r.records != 3 || r.copied != 1 || r.copies != 1 || r.otherValue != 0 {
		t.Errorf("read %d records (%+v); report %v", len(recs), recs, r)
	}
	if r.lostOffsets != 1 || r.notInTopic != 1 || r.partitions[0].read != 1 || r.partitions[1].read != 1 || r.partitions[1].acked != 2 {
		t.Errorf("report %v; examples %q", r, r.first)
	}
}
