package gateway

import (
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/gateway/cloudevents"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// CloudEvents: POST /v1/cloudevents takes the CloudEvents HTTP binding
// (package cloudevents: structured, batch and binary modes) from a source
// authenticated as for /v1/events (an API key or a client certificate),
// its body read, bounded and charged as /v1/events reads one. A webhook
// source with format cloudevents takes the same binding signed
// (webhooks.go). Each CloudEvent becomes an event of sluice's envelope
// (cloudevents.Event.Envelope) and is judged as a pushed one; the answer
// is /v1/events': a result for every event, by index, and its statuses.
//
// The CloudEvents source is recorded beside the authenticated source, in
// record.HeaderCloudEventsSource, never in its place: an event's identity
// stays (authenticated source, id). With the source's
// cloudevents.kafka_headers, records carry the CloudEvents Kafka binding's
// ce_* headers too, so a CloudEvents consumer reads the topic.

// CloudEventsConfig is a source's cloudevents block.
type CloudEventsConfig struct {
	// Types maps a CloudEvents type to a contract type; a type it lacks
	// is taken as a contract type itself.
	Types map[string]string `yaml:"types"`
	// KafkaHeaders: the source's CloudEvents carry the Kafka binding's
	// ce_* headers in their records, beside sluice's own. Default false.
	KafkaHeaders bool `yaml:"kafka_headers"`
}

// cloudEventsLimits bounds decoding one CloudEvents request of at most
// body bytes.
func (s *Service) cloudEventsLimits(body int) cloudevents.Limits {
	l := cloudevents.NewDefaultLimits()
	l.MaxEvents = s.cfg.Limits.MaxEventsPerRequest
	l.MaxBodyBytes = body
	l.MaxEventBytes = s.cfg.Limits.MaxEventBytes
	l.MaxAttributes = maxAttributes
	return l
}

// serveCloudEvents is POST /v1/cloudevents. The events may share the
// body's bytes, so its memory is held until the answer.
func (s *Service) serveCloudEvents() runtime.HandlerFunc {
	return s.serveBatch("cloudevents", spanCloudEvents, false, func(src *source, h http.Header, body []byte) (*batch, *Failure) {
		return s.cloudEventsBatch(src, h, body, s.now(), nil)
	})
}

// cloudEventsBatch decodes a CloudEvents request of src into the batch it
// publishes: each event in sluice's envelope, its type through the
// source's table, with at (the time of receipt, or of a webhook's
// signing) as the time of an event that has none. extra are record
// headers every event carries (a signed webhook's); a webhook's body is
// kept only when it is the one event's and within max_event_bytes, as a
// consumer verifies it from.
func (s *Service) cloudEventsBatch(src *source, h http.Header, body []byte, at time.Time, extra []kgo.RecordHeader) (*batch, *Failure) {
	d, ref := cloudevents.Decode(h, body, s.cloudEventsLimits(len(body)))
	if ref != nil {
		return nil, cloudEventsFailure(ref)
	}
	if len(d.Events) != 1 || len(body) > s.cfg.Limits.MaxEventBytes {
		// Within the bound a record is sized for (webhookRecordLimits).
		extra = withoutHeader(extra, record.HeaderWebhookBody)
	}
	b := &batch{size: len(body), extra: make([][]kgo.RecordHeader, 0, len(d.Events))}
	for i := range d.Events {
		e := &d.Events[i]
		typ := e.Type
		if t, ok := src.cloudEventTypes[typ]; ok {
			typ = t
		}
		var rej *ingestv1.Rejection
		if d.Refused != nil && d.Refused[i] != nil {
			rej = cloudEventsRejection(d.Refused[i])
		}
		b.add(e.Envelope(typ, at), rej, len(d.Events))
		headers := append(append([]kgo.RecordHeader(nil), extra...),
			kgo.RecordHeader{Key: record.HeaderCloudEventsSource, Value: []byte(e.Source)})
		if src.cloudEventHeaders {
			headers = append(headers, cloudevents.RecordHeaders(e)...)
		}
		b.extra = append(b.extra, headers)
		if tp, ok := e.Extensions[tracing.HeaderTraceparent]; ok && s.tracing {
			// Its distributed tracing extension: a link of its `send`
			// span, when that records.
			if b.links == nil {
				b.links = make([]string, len(d.Events))
			}
			b.links[i] = tp
		}
	}
	return b, nil
}

// withoutHeader is headers without the one named key.
func withoutHeader(headers []kgo.RecordHeader, key string) []kgo.RecordHeader {
	out := headers[:0:0]
	for _, h := range headers {
		if h.Key != key {
			out = append(out, h)
		}
	}
	return out
}

// cloudEventsFailure is a request the CloudEvents decoder refused whole.
func cloudEventsFailure(r *cloudevents.Refusal) *Failure {
	f := &Failure{Reason: r.Reason, Message: r.Msg}
	if r.Field != "" {
		f.Violations = []*ingestv1.FieldViolation{{Field: r.Field, Rule: "cloudevents", Message: r.Msg}}
	}
	return f
}

// cloudEventsRejection is an event the CloudEvents decoder refused.
func cloudEventsRejection(r *cloudevents.Refusal) *ingestv1.Rejection {
	rej := reject(r.Reason, r.Msg)
	if r.Field != "" {
		rej.Violations = []*ingestv1.FieldViolation{{Field: r.Field, Rule: "cloudevents", Message: r.Msg}}
	}
	return rej
}

// cloudEventsRecordLimits are what CloudEvents add to a record: the
// CloudEvents source, and with kafka_headers the ce_* headers.
func (c Config) cloudEventsRecordLimits() (headers, bytes int) {
	l := cloudevents.NewDefaultLimits()
	l.MaxAttributes = maxAttributes
	headers, bytes = 1, len(record.HeaderCloudEventsSource)+l.MaxContextBytes
	for _, s := range c.Sources {
		if s.CloudEvents.KafkaHeaders {
			return headers + cloudEventsCoreAttributes + 1 + l.MaxAttributes + 1, bytes + l.RecordHeaderBytes()
		}
	}
	return headers, bytes
}

// cloudEventsCoreAttributes is how many context attributes an event has
// besides its extensions (specversion, id, source, type, time, subject,
// dataschema, datacontenttype).
const cloudEventsCoreAttributes = 8
