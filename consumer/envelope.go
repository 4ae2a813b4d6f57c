package consumer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
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
	EnvelopePrefix         = "sluice-dlq-"
	HeaderErrorClass       = EnvelopePrefix + "error-class"
	HeaderError            = EnvelopePrefix + "error"
	HeaderSink             = EnvelopePrefix + "sink"
	HeaderAttempts         = EnvelopePrefix + "attempts"
	HeaderDLQRetries       = EnvelopePrefix + "retries"
	HeaderFirstFailureAt   = EnvelopePrefix + "first-failure-at"
	HeaderLastFailureAt    = EnvelopePrefix + "last-failure-at"
	HeaderRetryable        = EnvelopePrefix + "retryable"
	HeaderSourceTopic      = EnvelopePrefix + "source-topic"
	HeaderSourcePartition  = EnvelopePrefix + "source-partition"
	HeaderSourceOffset     = EnvelopePrefix + "source-offset"
	HeaderGroup            = EnvelopePrefix + "group"
	HeaderParkedReason     = EnvelopePrefix + "parked-reason"
	envelopeTimeLayout     = "2006-01-02T15:04:05.000000000Z07:00"
	classDecode            = "decode"
	parkedReasonMaxRetries = "max_retries"
	parkedReasonDeadline   = "deadline"
	parkedReasonUnreadable = "unreadable_envelope"
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
	// ParkedReason is set on parked records: max_retries, deadline, or
	// unreadable_envelope for a DLQ record without a valid envelope.
	ParkedReason string
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
	return h
}

// ParseEnvelope reads the envelope headers of a DLQ or parked record. Every
// header but the parked reason is required; the error is an
// *EnvelopeError naming the first bad one.
func ParseEnvelope(r *kgo.Record) (Envelope, error) {
	var e Envelope
	seen := make(map[string]bool, 13)
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
