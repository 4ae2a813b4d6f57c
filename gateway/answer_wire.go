package gateway

import (
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// The gRPC answer, written without reflection: a PublishResponse or
// PublishStreamResponse as the protobuf binary proto.Marshal writes, the
// same bytes (FuzzAnswerWire holds the two together, and must change with
// the messages). Once results carried their positions, a message in a
// oneof, proto.Marshal took some 280ns a result, nearly three times what
// it took before; this takes a fraction of that. It writes the fields the
// messages declare, not unknown ones, which an answer the gateway built
// never has. What it does not write, it leaves to proto.Marshal: a string
// that is not UTF-8 (which proto.Marshal refuses), a nil in the results or
// in a oneof.

// marshalAnswer is the server codec's Marshal for the two answers; ok is
// false for any other message, or one left to proto.Marshal.
func marshalAnswer(v any) (data mem.BufferSlice, ok bool) {
	var (
		batchID uint64
		field   protowire.Number = 1 // the results'
		results []*ingestv1.EventResult
	)
	switch m := v.(type) {
	case *ingestv1.PublishResponse:
		if m == nil {
			return nil, false
		}
		results = m.Results
	case *ingestv1.PublishStreamResponse:
		if m == nil {
			return nil, false
		}
		batchID, field, results = m.BatchId, 2, m.Results
	default:
		return nil, false
	}
	size := 0
	if batchID != 0 {
		size += 1 + protowire.SizeVarint(batchID)
	}
	for _, r := range results {
		if !writable(r) {
			return nil, false
		}
		size += 1 + protowire.SizeBytes(resultSize(r))
	}
	if mem.IsBelowBufferPoolingThreshold(size) {
		return mem.BufferSlice{mem.SliceBuffer(appendAnswerWire(make([]byte, 0, size), batchID, field, results))}, true
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	*buf = appendAnswerWire((*buf)[:0], batchID, field, results)
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, true
}

// appendAnswerWire appends the answer's fields: batch_id (field 1 of a
// PublishStreamResponse, when not 0) and the results in field. Every
// result must be writable.
func appendAnswerWire(b []byte, batchID uint64, field protowire.Number, results []*ingestv1.EventResult) []byte {
	if batchID != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, batchID)
	}
	for _, r := range results {
		b = protowire.AppendTag(b, field, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(resultSize(r)))
		b = appendResultWire(b, r)
	}
	return b
}

// writable reports whether appendResultWire writes r as proto.Marshal
// would.
func writable(r *ingestv1.EventResult) bool {
	if r == nil || !utf8.ValidString(r.Id) {
		return false
	}
	if rej := r.Rejection; rej != nil {
		if !utf8.ValidString(rej.Message) {
			return false
		}
		for _, v := range rej.Violations {
			if v == nil || !utf8.ValidString(v.Field) || !utf8.ValidString(v.Rule) || !utf8.ValidString(v.Message) {
				return false
			}
		}
		if c := rej.Conflict; c != nil && (!utf8.ValidString(c.Fingerprint) || !utf8.ValidString(c.AcceptedFingerprint)) {
			return false
		}
	}
	switch p := r.Position.(type) {
	case nil:
		return true
	case *ingestv1.EventResult_Kafka:
		return p.Kafka != nil && utf8.ValidString(p.Kafka.Topic)
	case *ingestv1.EventResult_Spool:
		return p.Spool != nil
	}
	return false
}

// Every field number here is below 16: a tag is one byte.

func varintSize(v uint64) int { return 1 + protowire.SizeVarint(v) }
func stringSize(s string) int { return 1 + protowire.SizeBytes(len(s)) }

func resultSize(r *ingestv1.EventResult) int {
	n := 0
	if r.Index != 0 {
		n += varintSize(uint64(r.Index))
	}
	if r.Id != "" {
		n += stringSize(r.Id)
	}
	if r.Outcome != 0 {
		n += varintSize(uint64(int64(r.Outcome)))
	}
	if r.Durability != nil {
		n += varintSize(uint64(int64(*r.Durability)))
	}
	if r.Rejection != nil {
		n += 1 + protowire.SizeBytes(rejectionSize(r.Rejection))
	}
	switch p := r.Position.(type) {
	case *ingestv1.EventResult_Kafka:
		n += 1 + protowire.SizeBytes(kafkaPositionSize(p.Kafka))
	case *ingestv1.EventResult_Spool:
		n += 1 + protowire.SizeBytes(spoolPositionSize(p.Spool))
	}
	return n
}

func appendResultWire(b []byte, r *ingestv1.EventResult) []byte {
	if r.Index != 0 {
		b = appendVarintField(b, 1, uint64(r.Index))
	}
	if r.Id != "" {
		b = appendStringField(b, 2, r.Id)
	}
	if r.Outcome != 0 {
		b = appendVarintField(b, 3, uint64(int64(r.Outcome)))
	}
	if r.Durability != nil {
		b = appendVarintField(b, 4, uint64(int64(*r.Durability)))
	}
	if rej := r.Rejection; rej != nil {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(rejectionSize(rej)))
		b = appendRejectionWire(b, rej)
	}
	switch p := r.Position.(type) {
	case *ingestv1.EventResult_Kafka:
		k := p.Kafka
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(kafkaPositionSize(k)))
		if k.Topic != "" {
			b = appendStringField(b, 1, k.Topic)
		}
		if k.Partition != 0 {
			b = appendVarintField(b, 2, uint64(int64(k.Partition)))
		}
		if k.Offset != 0 {
			b = appendVarintField(b, 3, uint64(k.Offset))
		}
	case *ingestv1.EventResult_Spool:
		sp := p.Spool
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(spoolPositionSize(sp)))
		if sp.Segment != 0 {
			b = appendVarintField(b, 1, sp.Segment)
		}
		if sp.Offset != 0 {
			b = appendVarintField(b, 2, uint64(sp.Offset))
		}
	}
	return b
}

func kafkaPositionSize(k *ingestv1.KafkaPosition) int {
	n := 0
	if k.Topic != "" {
		n += stringSize(k.Topic)
	}
	if k.Partition != 0 {
		n += varintSize(uint64(int64(k.Partition)))
	}
	if k.Offset != 0 {
		n += varintSize(uint64(k.Offset))
	}
	return n
}

func spoolPositionSize(p *ingestv1.SpoolPosition) int {
	n := 0
	if p.Segment != 0 {
		n += varintSize(p.Segment)
	}
	if p.Offset != 0 {
		n += varintSize(uint64(p.Offset))
	}
	return n
}

func rejectionSize(r *ingestv1.Rejection) int {
	n := 0
	if r.Reason != 0 {
		n += varintSize(uint64(int64(r.Reason)))
	}
	if r.Retryable {
		n += 2
	}
	if d := r.RetryAfter; d != nil {
		n += 1 + protowire.SizeBytes(durationSize(d.Seconds, d.Nanos))
	}
	for _, v := range r.Violations {
		n += 1 + protowire.SizeBytes(violationSize(v))
	}
	if r.Message != "" {
		n += stringSize(r.Message)
	}
	if c := r.Conflict; c != nil {
		n += 1 + protowire.SizeBytes(conflictSize(c))
	}
	return n
}

func conflictSize(c *ingestv1.PayloadConflict) int {
	n := 0
	if c.Fingerprint != "" {
		n += stringSize(c.Fingerprint)
	}
	if c.AcceptedFingerprint != "" {
		n += stringSize(c.AcceptedFingerprint)
	}
	return n
}

func appendRejectionWire(b []byte, r *ingestv1.Rejection) []byte {
	if r.Reason != 0 {
		b = appendVarintField(b, 1, uint64(int64(r.Reason)))
	}
	if r.Retryable {
		b = appendVarintField(b, 2, 1)
	}
	if d := r.RetryAfter; d != nil {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(durationSize(d.Seconds, d.Nanos)))
		if d.Seconds != 0 {
			b = appendVarintField(b, 1, uint64(d.Seconds))
		}
		if d.Nanos != 0 {
			b = appendVarintField(b, 2, uint64(int64(d.Nanos)))
		}
	}
	for _, v := range r.Violations {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(violationSize(v)))
		for i, s := range [...]string{v.Field, v.Rule, v.Message} {
			if s != "" {
				b = appendStringField(b, protowire.Number(i+1), s)
			}
		}
	}
	if r.Message != "" {
		b = appendStringField(b, 5, r.Message)
	}
	if c := r.Conflict; c != nil {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(conflictSize(c)))
		if c.Fingerprint != "" {
			b = appendStringField(b, 1, c.Fingerprint)
		}
		if c.AcceptedFingerprint != "" {
			b = appendStringField(b, 2, c.AcceptedFingerprint)
		}
	}
	return b
}

func durationSize(secs int64, nanos int32) int {
	n := 0
	if secs != 0 {
		n += varintSize(uint64(secs))
	}
	if nanos != 0 {
		n += varintSize(uint64(int64(nanos)))
	}
	return n
}

func violationSize(v *ingestv1.FieldViolation) int {
	n := 0
	for _, s := range [...]string{v.Field, v.Rule, v.Message} {
		if s != "" {
			n += stringSize(s)
		}
	}
	return n
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}
