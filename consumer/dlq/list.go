package dlq

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/record"
)

// scanIdle ends a scan when no record arrives for this long although some
// partition has not reached its end offset: its last offsets are then
// gaps (compacted records or transaction markers), not records.
const scanIdle = 5 * time.Second

// adminTimeout bounds each offset listing and the audit produce.
const adminTimeout = 30 * time.Second

// Selection picks dead letters. Zero fields select everything.
type Selection struct {
	// From (inclusive) and To (exclusive) bound the envelope's
	// last_failure_at: when the record last failed.
	From, To time.Time `json:",omitzero"`
	// Source and Type match the event's sluice-source and
	// sluice-event-type headers.
	Source string `json:",omitempty"`
	Type   string `json:",omitempty"`
	// Class matches the envelope's error class: transient, permanent,
	// decode.
	Class string `json:",omitempty"`
	// Partitions, when not empty, lists the DLQ topic's partitions to read.
	Partitions []int32 `json:",omitempty"`
	// FromOffset (inclusive) and ToOffset (exclusive, 0 for no bound)
	// bound the offsets in the DLQ topic.
	FromOffset int64 `json:",omitempty"`
	ToOffset   int64 `json:",omitempty"`
}

// DeadLetter is one record of a DLQ or parked topic.
type DeadLetter struct {
	Record *kgo.Record
	// Envelope is valid when EnvelopeErr is nil.
	Envelope    record.Envelope
	EnvelopeErr error
	// Event holds the original sluice headers; zero when EventErr is set.
	Event    record.EventHeaders
	EventErr error
}

func readDeadLetter(r *kgo.Record) DeadLetter {
	d := DeadLetter{Record: r}
	d.Envelope, d.EnvelopeErr = record.ParseEnvelope(r)
	d.Event, d.EventErr = record.ParseEvent(r)
	return d
}

// Match reports whether d is selected. A record whose envelope or event
// headers do not parse matches only a selection that does not filter on
// what it lacks.
func (s *Selection) Match(d *DeadLetter) bool {
	r := d.Record
	if len(s.Partitions) > 0 && !slices.Contains(s.Partitions, r.Partition) {
		return false
	}
	if r.Offset < s.FromOffset || (s.ToOffset > 0 && r.Offset >= s.ToOffset) {
		return false
	}
	if !s.From.IsZero() || !s.To.IsZero() || s.Class != "" {
		if d.EnvelopeErr != nil {
			return false
		}
		at := d.Envelope.LastFailureAt
		if (!s.From.IsZero() && at.Before(s.From)) || (!s.To.IsZero() && !at.Before(s.To)) {
			return false
		}
		if s.Class != "" && d.Envelope.Class != s.Class {
			return false
		}
	}
	if s.Source != "" || s.Type != "" {
		if d.EventErr != nil {
			return false
		}
		if (s.Source != "" && d.Event.Source != s.Source) || (s.Type != "" && d.Event.Type != s.Type) {
			return false
		}
	}
	return true
}

// scanTopic calls fn for every record of topic from its start offsets to
// the end offsets it finds when it starts, in offset order per partition,
// with a plain (non-group) client built from conn (kafkaconn.Read).
func scanTopic(ctx context.Context, conn []kgo.Opt, topic string, partitions []int32, fn func(*kgo.Record) error) error {
	admCl, err := kgo.NewClient(conn...)
	if err != nil {
		return fmt.Errorf("dlq: kafka client: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	actx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	starts, err := adm.ListStartOffsets(actx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("dlq: list start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(actx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("dlq: list end offsets of %s: %w", topic, err)
	}
	var spans []kafkaconn.Span
	starts.Each(func(o kadm.ListedOffset) {
		if len(partitions) > 0 && !slices.Contains(partitions, o.Partition) {
			return
		}
		if e, ok := ends.Lookup(topic, o.Partition); ok && e.Offset > o.Offset {
			spans = append(spans, kafkaconn.Span{Topic: topic, Partition: o.Partition, From: o.Offset, End: e.Offset})
		}
	})
	if len(spans) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(conn), kgo.FetchMaxWait(time.Second))...)
	if err != nil {
		return fmt.Errorf("dlq: kafka client: %w", err)
	}
	defer cl.Close()
	err = kafkaconn.Read(ctx, cl, spans, scanIdle, func(r *kgo.Record) (bool, error) { return false, fn(r) })
	if _, ok := err.(*kafkaconn.FetchError); ok {
		return fmt.Errorf("dlq: %w", err)
	}
	return err
}

// List calls fn for each selected dead letter of topic (a DLQ or parked
// topic), from its start to its end offsets when List starts.
func List(ctx context.Context, conn []kgo.Opt, topic string, sel Selection, fn func(DeadLetter) error) error {
	return scanTopic(ctx, conn, topic, sel.Partitions, func(r *kgo.Record) error {
		d := readDeadLetter(r)
		if !sel.Match(&d) {
			return nil
		}
		return fn(d)
	})
}
