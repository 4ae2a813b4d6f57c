package record

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/utctime"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Envelope header names, added to the original record's headers on a DLQ
// or parked record. Times are RFC 3339 with nanoseconds in UTC.
const (
	DLQHeaderPrefix          = "sluice-dlq-"
	DLQHeaderErrorClass      = DLQHeaderPrefix + "error-class"
	DLQHeaderError           = DLQHeaderPrefix + "error"
	DLQHeaderSink            = DLQHeaderPrefix + "sink"
	DLQHeaderAttempts        = DLQHeaderPrefix + "attempts"
	DLQHeaderDLQRetries      = DLQHeaderPrefix + "retries"
	DLQHeaderFirstFailureAt  = DLQHeaderPrefix + "first-failure-at"
	DLQHeaderLastFailureAt   = DLQHeaderPrefix + "last-failure-at"
	DLQHeaderRetryable       = DLQHeaderPrefix + "retryable"
	DLQHeaderSourceTopic     = DLQHeaderPrefix + "source-topic"
	DLQHeaderSourcePartition = DLQHeaderPrefix + "source-partition"
	DLQHeaderSourceOffset    = DLQHeaderPrefix + "source-offset"
	DLQHeaderGroup           = DLQHeaderPrefix + "group"
	DLQHeaderParkedReason    = DLQHeaderPrefix + "parked-reason"
	// DLQHeaderRefusal, on a record parked dlq_refused, is the topic that
	// refused its dead letter and Kafka's error.
	DLQHeaderRefusal = DLQHeaderPrefix + "refusal"
	// DLQHeaderTruncated, on a parked copy whose value was cut to fit
	// dlq.max_record_bytes, is the length of the original value in bytes.
	// The whole value is still at the source coordinates of the envelope.
	DLQHeaderTruncated = DLQHeaderPrefix + "truncated"
)

// ClassDecode is the error class of a record that did not decode.
const ClassDecode = "decode"

// ClassSchema is the error class of a record published under a schema
// version the consumer does not keep and that the newest version it keeps
// cannot read without loss. It is retryable: a later reload may bring the
// version, and a drain then delivers the record. It is no failure of the
// sink.
const ClassSchema = "schema"

// Parked reasons (DLQHeaderParkedReason).
const (
	ParkedMaxRetries = "max_retries"
	ParkedDeadline   = "deadline"
	ParkedUnreadable = "unreadable_envelope"
	// ParkedDLQRefused: Kafka refused the dead letter permanently (too
	// large, not authorized); a bounded copy is parked instead.
	ParkedDLQRefused = "dlq_refused"
	// ParkedSourceMismatch: a drained DLQ record whose envelope names
	// a source topic other than its DLQ topic's.
	ParkedSourceMismatch = "source_mismatch"
	// ParkedContract: a drained DLQ record that fails its contract.
	ParkedContract = "contract"
)

// Envelope is why and where a record was dead-lettered.
type Envelope struct {
	// Class is "transient", "permanent", "decode" (the record did not
	// decode: a permanent failure found before any write) or "schema"
	// (its schema version is not kept and the newest cannot read it: a
	// retryable failure found before any write).
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
	return fmt.Sprintf("record: envelope header %s: %v", e.Header, e.Err)
}

func (e *EnvelopeError) Unwrap() error { return e.Err }

var errEnvelopeMissing = errors.New("missing")

// headers returns the envelope as record headers.
func (e *Envelope) headers() []kgo.RecordHeader {
	h := []kgo.RecordHeader{
		{Key: DLQHeaderErrorClass, Value: []byte(e.Class)},
		{Key: DLQHeaderError, Value: []byte(e.Error)},
		{Key: DLQHeaderSink, Value: []byte(e.Sink)},
		{Key: DLQHeaderAttempts, Value: strconv.AppendInt(nil, int64(e.Attempts), 10)},
		{Key: DLQHeaderDLQRetries, Value: strconv.AppendInt(nil, int64(e.DLQRetries), 10)},
		{Key: DLQHeaderFirstFailureAt, Value: utctime.Append(nil, e.FirstFailureAt)},
		{Key: DLQHeaderLastFailureAt, Value: utctime.Append(nil, e.LastFailureAt)},
		{Key: DLQHeaderRetryable, Value: strconv.AppendBool(nil, e.Retryable)},
		{Key: DLQHeaderSourceTopic, Value: []byte(e.SourceTopic)},
		{Key: DLQHeaderSourcePartition, Value: strconv.AppendInt(nil, int64(e.SourcePartition), 10)},
		{Key: DLQHeaderSourceOffset, Value: strconv.AppendInt(nil, e.SourceOffset, 10)},
		{Key: DLQHeaderGroup, Value: []byte(e.Group)},
	}
	if e.ParkedReason != "" {
		h = append(h, kgo.RecordHeader{Key: DLQHeaderParkedReason, Value: []byte(e.ParkedReason)})
	}
	if e.Refusal != "" {
		h = append(h, kgo.RecordHeader{Key: DLQHeaderRefusal, Value: []byte(e.Refusal)})
	}
	if e.TruncatedFrom > 0 {
		h = append(h, kgo.RecordHeader{Key: DLQHeaderTruncated, Value: strconv.AppendInt(nil, int64(e.TruncatedFrom), 10)})
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
		if !strings.HasPrefix(h.Key, DLQHeaderPrefix) {
			continue
		}
		if seen[h.Key] {
			return Envelope{}, &EnvelopeError{h.Key, errors.New("repeated")}
		}
		seen[h.Key] = true
		v := string(h.Value)
		var err error
		switch h.Key {
		case DLQHeaderErrorClass:
			e.Class = v
		case DLQHeaderError:
			e.Error = v
		case DLQHeaderSink:
			e.Sink = v
		case DLQHeaderAttempts:
			e.Attempts, err = parseCount(v)
		case DLQHeaderDLQRetries:
			e.DLQRetries, err = parseCount(v)
		case DLQHeaderFirstFailureAt:
			e.FirstFailureAt, err = time.Parse(time.RFC3339Nano, v)
		case DLQHeaderLastFailureAt:
			e.LastFailureAt, err = time.Parse(time.RFC3339Nano, v)
		case DLQHeaderRetryable:
			e.Retryable, err = strconv.ParseBool(v)
		case DLQHeaderSourceTopic:
			e.SourceTopic = v
			if v == "" {
				err = errors.New("empty")
			}
		case DLQHeaderSourcePartition:
			var p int64
			p, err = strconv.ParseInt(v, 10, 32)
			if err == nil && p < 0 {
				err = errors.New("negative")
			}
			e.SourcePartition = int32(p)
		case DLQHeaderSourceOffset:
			e.SourceOffset, err = strconv.ParseInt(v, 10, 64)
			if err == nil && e.SourceOffset < 0 {
				err = errors.New("negative")
			}
		case DLQHeaderGroup:
			e.Group = v
		case DLQHeaderParkedReason:
			e.ParkedReason = v
		case DLQHeaderRefusal:
			e.Refusal = v
		case DLQHeaderTruncated:
			e.TruncatedFrom, err = parseCount(v)
		}
		if err != nil {
			return Envelope{}, &EnvelopeError{h.Key, err}
		}
	}
	for _, name := range [...]string{DLQHeaderErrorClass, DLQHeaderError, DLQHeaderSink, DLQHeaderAttempts, DLQHeaderDLQRetries,
		DLQHeaderFirstFailureAt, DLQHeaderLastFailureAt, DLQHeaderRetryable, DLQHeaderSourceTopic, DLQHeaderSourcePartition,
		DLQHeaderSourceOffset, DLQHeaderGroup} {
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

// OriginalHeaders returns r's headers without envelope headers.
func OriginalHeaders(r *kgo.Record) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, DLQHeaderPrefix) {
			out = append(out, h)
		}
	}
	return out
}

// NewDeadLetter builds the DLQ or parked record of r: its key, value and
// original headers, then env.
func NewDeadLetter(topic string, r *kgo.Record, env *Envelope) *kgo.Record {
	h := OriginalHeaders(r)
	h = append(h, env.headers()...)
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: h}
}

// batchOverhead is the size of a v2 record batch without its records, as
// kgo counts it against ProducerBatchMaxBytes.
const batchOverhead = 4 + 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4

// BatchBytes is the size of a batch that holds r alone, as kgo
// measures it against ProducerBatchMaxBytes (dlq.max_record_bytes) before
// it knows the broker's produce version; after, it measures up to 3 bytes
// less (a flexible request frames the batch with a uvarint). A record
// within it is never refused MESSAGE_TOO_LARGE by the client.
func BatchBytes(r *kgo.Record) int {
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
	return fmt.Sprintf("record: key and headers take %d bytes, over dlq.max_record_bytes (%d) without any of the value",
		e.HeaderBytes, e.MaxRecordBytes)
}

// NewParkedCopy is the record parked in place of a dead letter Kafka refused:
// r's key and original headers, env, and as much of r's value as fits in
// maxBytes (as BatchBytes counts). A cut value is a prefix of the
// original, and the copy carries DLQHeaderTruncated with the original length.
func NewParkedCopy(topic string, r *kgo.Record, env *Envelope, maxBytes int) (*kgo.Record, error) {
	out := NewDeadLetter(topic, r, env)
	if BatchBytes(out) <= maxBytes {
		return out, nil
	}
	cut := *env
	cut.TruncatedFrom = len(r.Value)
	out = NewDeadLetter(topic, &kgo.Record{Key: r.Key, Headers: r.Headers}, &cut)
	bare := BatchBytes(out)
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
// format (NewEvent). The gateway does not bound source names:
// maxSourceBytes is an assumption, as are maxTraceparentBytes and
// maxTracestateBytes for a record another producer wrote, and a record
// over them is still parked, cut to fit.
const (
	maxKeyBytes            = 256 * utf8.UTFMax // partition_key: 256 characters; else the event id
	maxEventIDBytes        = 128               // id: 128 ASCII characters
	maxEventTypeBytes      = 200               // type: 200 characters, a protobuf full name (ASCII)
	maxSourceBytes         = 256
	maxTraceparentBytes    = 512 // a W3C traceparent of version 00 takes 55
	maxTracestateBytes     = 512 // the gateway drops a longer one (tracing.MaxTracestateBytes)
	fingerprintBytes       = len("sha256:") + 32
	maxAttributes          = 16
	maxAttributeKeyBytes   = 64                // ASCII
	maxAttributeValueBytes = 256 * utf8.UTFMax // 256 characters
	maxTopicBytes          = 249               // Kafka's limit on topic names
	maxSinkNameBytes       = 64
	maxCountDigits         = 10 // an int32 count
	maxOffsetDigits        = 19
	// maxBatchBytes is the most franz-go allows for ProducerBatchMaxBytes.
	maxBatchBytes = 1 << 30
)

// DeadLetterBound is the most bytes (as BatchBytes counts) a dead
// letter of a gateway-published event with a value of valueBytes, or of
// its replay (WithReplay), may take,
// its envelope included, when error messages are cut to maxErrorBytes and
// the consumer group is named group: the parked copy of a refused dead letter, with
// both refusal and truncation headers, is the largest form.
func DeadLetterBound(valueBytes, maxErrorBytes int, group string) int {
	if valueBytes > maxBatchBytes || maxErrorBytes > maxBatchBytes || len(group) > maxBatchBytes {
		return math.MaxInt
	}
	x := func(n int) []byte { return make([]byte, n) }
	ts := x(len(utctime.Layout))
	h := []kgo.RecordHeader{
		{Key: HeaderEventID, Value: x(maxEventIDBytes)},
		{Key: HeaderEventType, Value: x(maxEventTypeBytes)},
		{Key: HeaderSource, Value: x(maxSourceBytes)},
		{Key: HeaderOccurredAt, Value: ts},
		{Key: HeaderIngestedAt, Value: ts},
		{Key: HeaderFingerprint, Value: x(fingerprintBytes)},
		{Key: HeaderTraceparent, Value: x(maxTraceparentBytes)},
		{Key: HeaderTracestate, Value: x(maxTracestateBytes)},
		{Key: HeaderReplayID, Value: x(MaxReplayIDBytes)},
		{Key: HeaderReplayActor, Value: x(MaxReplayActorBytes)},
	}
	for range maxAttributes {
		h = append(h, kgo.RecordHeader{
			Key:   string(x(len(AttributeHeaderPrefix) + maxAttributeKeyBytes)),
			Value: x(maxAttributeValueBytes),
		})
	}
	longest := 0
	for _, s := range [...]string{ParkedMaxRetries, ParkedDeadline, ParkedUnreadable,
		ParkedDLQRefused, ParkedSourceMismatch, ParkedContract} {
		longest = max(longest, len(s))
	}
	h = append(h,
		kgo.RecordHeader{Key: DLQHeaderErrorClass, Value: x(len("transient"))},
		kgo.RecordHeader{Key: DLQHeaderError, Value: x(maxErrorBytes)},
		kgo.RecordHeader{Key: DLQHeaderSink, Value: x(maxSinkNameBytes)},
		kgo.RecordHeader{Key: DLQHeaderAttempts, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: DLQHeaderDLQRetries, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: DLQHeaderFirstFailureAt, Value: ts},
		kgo.RecordHeader{Key: DLQHeaderLastFailureAt, Value: ts},
		kgo.RecordHeader{Key: DLQHeaderRetryable, Value: x(len("false"))},
		kgo.RecordHeader{Key: DLQHeaderSourceTopic, Value: x(maxTopicBytes)},
		kgo.RecordHeader{Key: DLQHeaderSourcePartition, Value: x(maxCountDigits)},
		kgo.RecordHeader{Key: DLQHeaderSourceOffset, Value: x(maxOffsetDigits)},
		kgo.RecordHeader{Key: DLQHeaderGroup, Value: x(len(group))},
		kgo.RecordHeader{Key: DLQHeaderParkedReason, Value: x(longest)},
		kgo.RecordHeader{Key: DLQHeaderRefusal, Value: x(maxErrorBytes)},
		kgo.RecordHeader{Key: DLQHeaderTruncated, Value: x(maxCountDigits)},
	)
	return batchBytes(maxKeyBytes, valueBytes, h)
}
