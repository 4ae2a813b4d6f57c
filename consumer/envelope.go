package consumer

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/publish"
)

// DLQ and parked topic suffixes.
const (
	DLQSuffix    = ".dlq"
	ParkedSuffix = ".parked"
)

// DLQTopic and ParkedTopic name the dead-letter and parked topics of a
// source topic.
func DLQTopic(topic string) string    { return topic + DLQSuffix }
func ParkedTopic(topic string) string { return topic + ParkedSuffix }

func isDerivedTopic(t string) bool {
	return strings.HasSuffix(t, DLQSuffix) || strings.HasSuffix(t, ParkedSuffix)
}

// Envelope header names, added to the original record's headers on a DLQ
// or parked record. Times are RFC 3339 with nanoseconds in UTC.
const (
	EnvelopePrefix        = "sluice-dlq-"
	HeaderErrorClass      = EnvelopePrefix + "error-class"
	HeaderError           = EnvelopePrefix + "error"
	HeaderSink            = EnvelopePrefix + "sink"
	HeaderAttempts        = EnvelopePrefix + "attempts"
	HeaderDLQRetries      = EnvelopePrefix + "retries"
	HeaderFirstFailureAt  = EnvelopePrefix + "first-failure-at"
	HeaderLastFailureAt   = EnvelopePrefix + "last-failure-at"
	HeaderRetryable       = EnvelopePrefix + "retryable"
	HeaderSourceTopic     = EnvelopePrefix + "source-topic"
	HeaderSourcePartition = EnvelopePrefix + "source-partition"
	HeaderSourceOffset    = EnvelopePrefix + "source-offset"
	HeaderGroup           = EnvelopePrefix + "group"
	HeaderParkedReason    = EnvelopePrefix + "parked-reason"
	// HeaderRefusal, on a record parked dlq_refused, is the topic that
	// refused its dead letter and Kafka's error.
	HeaderRefusal = EnvelopePrefix + "refusal"
	// HeaderTruncated, on a parked copy whose value was cut to fit
	// dlq.max_record_bytes, is the length of the original value in bytes.
	// The whole value is still at the source coordinates of the envelope.
	HeaderTruncated    = EnvelopePrefix + "truncated"
	envelopeTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"
	classDecode        = "decode"
)

// Parked reasons (HeaderParkedReason).
const (
	parkedReasonMaxRetries = "max_retries"
	parkedReasonDeadline   = "deadline"
	parkedReasonUnreadable = "unreadable_envelope"
	// parkedReasonDLQRefused: Kafka refused the dead letter permanently (too
	// large, not authorized); a bounded copy is parked instead.
	parkedReasonDLQRefused = "dlq_refused"
	// parkedReasonSourceMismatch: a drained DLQ record whose envelope names
	// a source topic other than its DLQ topic's.
	parkedReasonSourceMismatch = "source_mismatch"
	// parkedReasonContract: a drained DLQ record that fails its contract.
	parkedReasonContract = "contract"
)

// Envelope is why and where a record was dead-lettered.
type Envelope struct {
	// Class is "transient", "permanent" or "decode" (the record did not
	// decode: a permanent failure found before any write).
	Class string
	// Error is the failure's message, cut to the configured length.
	Error    string
	Sink     string
	Attempts int
	// DLQRetries counts the drains the record failed; it only grows.
	DLQRetries     int
	FirstFailureAt time.Time
	LastFailureAt  time.Time
	Retryable      bool
	// SourceTopic, SourcePartition and SourceOffset locate the original
	// record in its source topic.
	SourceTopic     string
	SourcePartition int32
	SourceOffset    int64
	Group           string
	// ParkedReason is set on parked records: max_retries, deadline,
	// unreadable_envelope for a DLQ record without a valid envelope,
	// dlq_refused for a dead letter Kafka refused, source_mismatch for a
	// drained record whose envelope names another source topic than its DLQ
	// topic's, contract for a drained record that fails its contract.
	ParkedReason string
	// Refusal is, on a record parked dlq_refused, the topic that refused
	// the dead letter and Kafka's error.
	Refusal string
	// TruncatedFrom is, on a parked copy whose value was cut, the length of
	// the original value; 0 when the value is whole.
	TruncatedFrom int
}

// EnvelopeError is a DLQ record whose envelope is missing or garbled.
type EnvelopeError struct {
	Header string
	Err    error
}

func (e *EnvelopeError) Error() string {
	return fmt.Sprintf("consumer: envelope header %s: %v", e.Header, e.Err)
}

func (e *EnvelopeError) Unwrap() error { return e.Err }

var errEnvelopeMissing = errors.New("missing")

// headers returns the envelope as record headers.
func (e *Envelope) headers() []kgo.RecordHeader {
	h := []kgo.RecordHeader{
		{Key: HeaderErrorClass, Value: []byte(e.Class)},
		{Key: HeaderError, Value: []byte(e.Error)},
		{Key: HeaderSink, Value: []byte(e.Sink)},
		{Key: HeaderAttempts, Value: strconv.AppendInt(nil, int64(e.Attempts), 10)},
		{Key: HeaderDLQRetries, Value: strconv.AppendInt(nil, int64(e.DLQRetries), 10)},
		{Key: HeaderFirstFailureAt, Value: e.FirstFailureAt.UTC().AppendFormat(nil, envelopeTimeLayout)},
		{Key: HeaderLastFailureAt, Value: e.LastFailureAt.UTC().AppendFormat(nil, envelopeTimeLayout)},
		{Key: HeaderRetryable, Value: strconv.AppendBool(nil, e.Retryable)},
		{Key: HeaderSourceTopic, Value: []byte(e.SourceTopic)},
		{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(e.SourcePartition), 10)},
		{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, e.SourceOffset, 10)},
		{Key: HeaderGroup, Value: []byte(e.Group)},
	}
	if e.ParkedReason != "" {
		h = append(h, kgo.RecordHeader{Key: HeaderParkedReason, Value: []byte(e.ParkedReason)})
	}
	if e.Refusal != "" {
		h = append(h, kgo.RecordHeader{Key: HeaderRefusal, Value: []byte(e.Refusal)})
	}
	if e.TruncatedFrom > 0 {
		h = append(h, kgo.RecordHeader{Key: HeaderTruncated, Value: strconv.AppendInt(nil, int64(e.TruncatedFrom), 10)})
	}
	return h
}

// ParseEnvelope reads the envelope headers of a DLQ or parked record. Every
// header but the parked reason, the refusal and the truncation is required; the error is an
// *EnvelopeError naming the first bad one.
func ParseEnvelope(r *kgo.Record) (Envelope, error) {
	var e Envelope
	seen := make(map[string]bool, 15)
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, EnvelopePrefix) {
			continue
		}
		if seen[h.Key] {
			return Envelope{}, &EnvelopeError{h.Key, errors.New("repeated")}
		}
		seen[h.Key] = true
		v := string(h.Value)
		var err error
		switch h.Key {
		case HeaderErrorClass:
			e.Class = v
		case HeaderError:
			e.Error = v
		case HeaderSink:
			e.Sink = v
		case HeaderAttempts:
			e.Attempts, err = parseCount(v)
		case HeaderDLQRetries:
			e.DLQRetries, err = parseCount(v)
		case HeaderFirstFailureAt:
			e.FirstFailureAt, err = time.Parse(time.RFC3339Nano, v)
		case HeaderLastFailureAt:
			e.LastFailureAt, err = time.Parse(time.RFC3339Nano, v)
		case HeaderRetryable:
			e.Retryable, err = strconv.ParseBool(v)
		case HeaderSourceTopic:
			e.SourceTopic = v
			if v == "" {
				err = errors.New("empty")
			}
		case HeaderSourcePartition:
			var p int64
			p, err = strconv.ParseInt(v, 10, 32)
			if err == nil && p < 0 {
				err = errors.New("negative")
			}
			e.SourcePartition = int32(p)
		case HeaderSourceOffset:
			e.SourceOffset, err = strconv.ParseInt(v, 10, 64)
			if err == nil && e.SourceOffset < 0 {
				err = errors.New("negative")
			}
		case HeaderGroup:
			e.Group = v
		case HeaderParkedReason:
			e.ParkedReason = v
		case HeaderRefusal:
			e.Refusal = v
		case HeaderTruncated:
			e.TruncatedFrom, err = parseCount(v)
		}
		if err != nil {
			return Envelope{}, &EnvelopeError{h.Key, err}
		}
	}
	for _, name := range [...]string{HeaderErrorClass, HeaderError, HeaderSink, HeaderAttempts, HeaderDLQRetries,
		HeaderFirstFailureAt, HeaderLastFailureAt, HeaderRetryable, HeaderSourceTopic, HeaderSourcePartition,
		HeaderSourceOffset, HeaderGroup} {
		if !seen[name] {
			return Envelope{}, &EnvelopeError{name, errEnvelopeMissing}
		}
	}
	e.FirstFailureAt = e.FirstFailureAt.UTC()
	e.LastFailureAt = e.LastFailureAt.UTC()
	return e, nil
}

func parseCount(v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return int(n), err
}

// originalHeaders returns r's headers without envelope headers.
func originalHeaders(r *kgo.Record) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, EnvelopePrefix) {
			out = append(out, h)
		}
	}
	return out
}

// envelopeRecord builds the DLQ or parked record of r: its key, value and
// original headers, then env.
func envelopeRecord(topic string, r *kgo.Record, env *Envelope) *kgo.Record {
	h := originalHeaders(r)
	h = append(h, env.headers()...)
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: h}
}

// batchOverhead is the size of a v2 record batch without its records, as
// kgo counts it against ProducerBatchMaxBytes.
const batchOverhead = 4 + 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4

// recordBatchBytes is the size of a batch that holds r alone, as kgo
// measures it against ProducerBatchMaxBytes (dlq.max_record_bytes) before
// it knows the broker's produce version; after, it measures up to 3 bytes
// less (a flexible request frames the batch with a uvarint). A record
// within it is never refused MESSAGE_TOO_LARGE by the client.
func recordBatchBytes(r *kgo.Record) int {
	return batchBytes(len(r.Key), len(r.Value), r.Headers)
}

func batchBytes(keyLen, valueLen int, headers []kgo.RecordHeader) int {
	// Attributes, then the timestamp and offset deltas: 0 in a batch of one.
	l := 1 + 1 + 1 +
		kbin.VarintLen(int32(keyLen)) + keyLen +
		kbin.VarintLen(int32(valueLen)) + valueLen +
		kbin.VarintLen(int32(len(headers)))
	for _, h := range headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
	}
	return batchOverhead + kbin.VarintLen(int32(l)) + l
}

// CopyTooLargeError is a parked copy that cannot be made to fit: the key
// and headers alone take more than the producer's maximum record size.
type CopyTooLargeError struct {
	HeaderBytes, MaxRecordBytes int
}

func (e *CopyTooLargeError) Error() string {
	return fmt.Sprintf("consumer: key and headers take %d bytes, over dlq.max_record_bytes (%d) without any of the value",
		e.HeaderBytes, e.MaxRecordBytes)
}

// parkedCopy is the record parked in place of a dead letter Kafka refused:
// r's key and original headers, env, and as much of r's value as fits in
// maxBytes (as recordBatchBytes counts). A cut value is a prefix of the
// original, and the copy carries HeaderTruncated with the original length.
func parkedCopy(topic string, r *kgo.Record, env *Envelope, maxBytes int) (*kgo.Record, error) {
	out := envelopeRecord(topic, r, env)
	if recordBatchBytes(out) <= maxBytes {
		return out, nil
	}
	cut := *env
	cut.TruncatedFrom = len(r.Value)
	out = envelopeRecord(topic, &kgo.Record{Key: r.Key, Headers: r.Headers}, &cut)
	bare := recordBatchBytes(out)
	// The value's length prefix and the record's grow with the value, by
	// at most 4 bytes each.
	n := min(maxBytes-bare-8, len(r.Value))
	if n < 0 {
		return nil, &CopyTooLargeError{HeaderBytes: bare, MaxRecordBytes: maxBytes}
	}
	out.Value = r.Value[:n]
	return out, nil
}

// Bounds of what a record published by the gateway carries besides its
// value, from the Event contract (proto/sluice/ingest/v1) and the record
// format (publish.NewRecord). The gateway does not bound source names nor
// the caller's traceparent: maxSourceBytes and maxTraceparentBytes are
// assumptions, and a record over them is still parked, cut to fit.
const (
	maxKeyBytes            = 256 * utf8.UTFMax // partition_key: 256 characters; else the event id
	maxEventIDBytes        = 128               // id: 128 ASCII characters
	maxEventTypeBytes      = 200               // type: 200 characters, a protobuf full name (ASCII)
	maxSourceBytes         = 256
	maxTraceparentBytes    = 512 // a W3C traceparent of version 00 takes 55
	fingerprintBytes       = len("sha256:") + 32
	maxAttributes          = 16
	maxAttributeKeyBytes   = 64                // ASCII
	maxAttributeValueBytes = 256 * utf8.UTFMax // 256 characters
	maxTopicBytes          = 249               // Kafka's limit on topic names
	maxSinkNameBytes       = 64
	maxCountDigits         = 10 // an int32 count
	maxOffsetDigits        = 19
)

// deadLetterBound is the most bytes (as recordBatchBytes counts) a dead
// letter of a gateway-published event with a value of valueBytes may take,
// its envelope included: the parked copy of a refused dead letter, with
// both refusal and truncation headers, is the largest form.
func deadLetterBound(c *Config, valueBytes int) int {
	if valueBytes > maxRecordBytes || c.DLQ.MaxErrorBytes > maxRecordBytes || len(c.Group) > maxRecordBytes {
		return math.MaxInt
	}
	x := func(n int) []byte { return make([]byte, n) }
	ts := x(len(envelopeTimeLayout))
	h := []kgo.RecordHeader{
		{Key: publish.HeaderEventID, Value: x(maxEventIDBytes)},
		{Key: publish.HeaderEventType, Value: x(maxEventTypeBytes)},
		{Key: publish.HeaderSource, Value: x(maxSourceBytes)},
		{Key: publish.HeaderOccurredAt, Value: ts},
		{Key: publish.HeaderIngestedAt, Value: ts},
		{Key: publish.HeaderFingerprint, Value: x(fingerprintBytes)},
		{Key: publish.HeaderTraceparent, Value: x(maxTraceparentBytes)},
	}
	for range maxAttributes {
		h = append(h, kgo.RecordHeader{
			Key:   string(x(len(publish.AttributeHeaderPrefix) + maxAttributeKeyBytes)),
			Value: x(maxAttributeValueBytes),
		})
	}
	longest := 0
	for _, s := range [...]string{parkedReasonMaxRetries, parkedReasonDeadline, parkedReasonUnreadable,
		parkedReasonDLQRefused, parkedReasonSourceMismatch, parkedReasonContract} {
		longest = max(longest, len(s))
	}
	h = append(h,
		kgo.RecordHeader{Key: HeaderErrorClass, Value: x(len("transient"))},
		kgo.RecordHeader{Key: HeaderError, Value: x(c.DLQ.MaxErrorBytes)},
		kgo.RecordHeader{Key: HeaderSink, Value: x(maxSinkNameBytes)},
		kgo.RecordHeader{Key: HeaderAttempts, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: HeaderDLQRetries, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: HeaderFirstFailureAt, Value: ts},
		kgo.RecordHeader{Key: HeaderLastFailureAt, Value: ts},
		kgo.RecordHeader{Key: HeaderRetryable, Value: x(len("false"))},
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: x(maxTopicBytes)},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: x(maxOffsetDigits)},
		kgo.RecordHeader{Key: HeaderGroup, Value: x(len(c.Group))},
		kgo.RecordHeader{Key: HeaderParkedReason, Value: x(longest)},
		kgo.RecordHeader{Key: HeaderRefusal, Value: x(c.DLQ.MaxErrorBytes)},
		kgo.RecordHeader{Key: HeaderTruncated, Value: x(maxCountDigits)},
	)
	return batchBytes(maxKeyBytes, valueBytes, h)
}

// truncateError cuts msg to at most max bytes on a rune boundary.
func truncateError(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	const ellipsis = "..."
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + ellipsis
}
