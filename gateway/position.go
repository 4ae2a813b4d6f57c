package gateway

import (
	"github.com/sluicehq/sluice/buffer"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Where an accepted event is durable, as its result says it
// (EventResult.position) and as the dedup window keeps it for the
// duplicates that come after it (origin).

// topic is an event type's Kafka topic, and its number in
// Service.topicNames: how an origin names it.
type topic struct {
	name string
	num  int
}

// An origin's where holds its kind in the top two bits; below them, for
// Kafka, the topic's number (30 bits) and the partition (32 bits), and
// for the spool, the segment index (62 bits). The offset is the record's
// offset in its partition, or its frame's in the segment.
const (
	originKafka    uint64 = 1 << 62
	originSpool    uint64 = 2 << 62
	originKindMask uint64 = 3 << 62
)

// kafkaOrigin is the origin of a record at offset of partition of topic
// number t; none when t does not fit.
func kafkaOrigin(t int, partition int32, offset int64) origin {
	if t < 0 || t >= 1<<30 {
		return origin{}
	}
	return origin{where: originKafka | uint64(t)<<32 | uint64(uint32(partition)), offset: offset}
}

// spoolOrigin is the origin of a record at p in the spool; none when its
// segment index does not fit.
func spoolOrigin(p buffer.Position) origin {
	if p.Segment >= 1<<62 {
		return origin{}
	}
	return origin{where: originSpool | p.Segment, offset: p.Offset}
}

// kafkaResult is a result with its Kafka position, in one allocation.
type kafkaResult struct {
	result   ingestv1.EventResult
	position ingestv1.EventResult_Kafka
	kafka    ingestv1.KafkaPosition
}

func (k *kafkaResult) set(topic string, partition int32, offset int64) *ingestv1.EventResult {
	k.kafka.Topic, k.kafka.Partition, k.kafka.Offset = topic, partition, offset
	k.position.Kafka = &k.kafka
	k.result.Position = &k.position
	return &k.result
}

// spoolPosition is a result's spool position, in one allocation.
type spoolPosition struct {
	position ingestv1.EventResult_Spool
	spool    ingestv1.SpoolPosition
}

func (p *spoolPosition) set(r *ingestv1.EventResult, segment uint64, offset int64) *ingestv1.EventResult {
	p.spool.Segment, p.spool.Offset = segment, offset
	p.position.Spool = &p.spool
	r.Position = &p.position
	return r
}

// duplicate is the result of an event whose id was accepted within the
// dedup window: with o, where the accepted one went, when known.
func (s *Service) duplicate(i int, id string, o origin) *ingestv1.EventResult {
	switch o.where & originKindMask {
	case originKafka:
		if t := int(o.where>>32) &^ (3 << 30); t < len(s.topicNames) {
			r := new(kafkaResult)
			r.result.Index, r.result.Id, r.result.Outcome = uint32(i), id, ingestv1.Outcome_DUPLICATE
			return r.set(s.topicNames[t], int32(uint32(o.where)), o.offset)
		}
	case originSpool:
		r := new(struct {
			result ingestv1.EventResult
			spoolPosition
		})
		r.result.Index, r.result.Id, r.result.Outcome = uint32(i), id, ingestv1.Outcome_DUPLICATE
		return r.set(&r.result, o.where&^originKindMask, o.offset)
	}
	return &ingestv1.EventResult{Index: uint32(i), Id: id, Outcome: ingestv1.Outcome_DUPLICATE}
}
