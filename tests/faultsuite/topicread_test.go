package faultsuite

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/record"
)

// topicVerdict reads the suite's topic back with a consumer of its own, from
// the scenario's start (l.from) to its end, and the sink's rows of the
// scenario, and has the topic checker judge them with what the callers
// saw (l.writes). inDLQ and parked are the reconcile's last reads of the
// DLQ and parked topics: an identity there went through the DLQ, and its
// sink row does not take part in the sink's order.
func (s *system) topicVerdict(l *ledger, scope eventScope, inDLQ, parked map[string]int) topicReport {
	s.t.Helper()
	records := s.topicRecords(l.from)
	dead := map[string]bool{}
	for _, m := range []map[string]int{inDLQ, parked} {
		for id, n := range m {
			if n > 0 {
				dead[id] = true
			}
		}
	}
	return checkTopic(topicInput{
		topic:   s.topic,
		acked:   l.acked,
		writes:  l.writes.snapshot(),
		records: records,
		inScope: func(key string) bool {
			_, id, _ := strings.Cut(key, "/")
			return scope.has(id)
		},
		sink:         s.sinkWrites(scope),
		deadLettered: dead,
	})
}

// topicRecords reads the suite's topic from the offsets from (endOffsets'
// earlier answer; a partition from lacks is read from its start) to its
// end now.
func (s *system) topicRecords(from map[int32]int64) []topicRecord {
	s.t.Helper()
	var records []topicRecord
	s.topicIDsFrom(s.topic, from, func(rec *kgo.Record) {
		tr := topicRecord{position: position{rec.Partition, rec.Offset}, key: string(rec.Key), value: valueHash(rec.Value)}
		var source, id string
		for _, h := range rec.Headers {
			switch h.Key {
			case record.HeaderEventID:
				id = string(h.Value)
			case record.HeaderSource:
				source = string(h.Value)
			}
		}
		if id != "" {
			tr.identity = identity(source, id)
		}
		records = append(records, tr)
	})
	return records
}

// valueHash tells records' values apart.
func valueHash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// sinkWrites reads the sink table's rows of the scenario: each identity's
// partition key and the time its row was written.
func (s *system) sinkWrites(scope eventScope) map[string]sinkWrite {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		s.t.Errorf("sink writes: %v", err)
		return nil
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT source, event_id, partition_key, written_at FROM %s WHERE %s", s.table, scope.where()), scope.arg())
	if err != nil {
		s.t.Errorf("sink writes: %v", err)
		return nil
	}
	defer rows.Close()
	out := map[string]sinkWrite{}
	for rows.Next() {
		var source, id string
		var w sinkWrite
		if err := rows.Scan(&source, &id, &w.key, &w.written); err != nil {
			s.t.Errorf("sink writes: %v", err)
			return nil
		}
		out[identity(source, id)] = w
	}
	if err := rows.Err(); err != nil {
		s.t.Errorf("sink writes: %v", err)
		return nil
	}
	return out
}
