package cloudevents

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaPrefix starts the name of a Kafka header that carries a context
// attribute (the Kafka protocol binding, binary mode).
const kafkaPrefix = "ce_"

// RecordHeaders returns the CloudEvents Kafka protocol binding's headers
// for e, in binary mode, for a record whose value is e's contract message
// in protobuf binary, so that a CloudEvents consumer reads the record as
// e: ce_specversion, ce_id, ce_source, ce_type, then ce_time, ce_subject
// and ce_dataschema when e has them, then ce_<name> for each extension
// (partitionkey included: the binding's key mapping must not change the
// event) in name order, and content-type. Values are the attributes'
// canonical strings in UTF-8, as the binding has them (no percent-encoding);
// time is RFC 3339 with the offset it was sent with.
//
// content-type is application/protobuf, whatever e's datacontenttype
// was: it says what the record's value is, and the value is the contract
// message in protobuf binary, not the data as sent.
//
// For an event Decode accepted under l, the headers' keys and values take
// at most l.RecordHeaderBytes() bytes. They share one allocation.
func RecordHeaders(e *Event) []kgo.RecordHeader {
	names := make([]string, 0, len(e.Extensions))
	for k := range e.Extensions {
		names = append(names, k)
	}
	sort.Strings(names)
	var tbuf [64]byte
	var t []byte
	if e.HasTime {
		t = e.Time.AppendFormat(tbuf[:0], time.RFC3339Nano)
	}
	n := len(e.SpecVersion) + len(e.ID) + len(e.Source) + len(e.Type) + len(t) + len(e.Subject) + len(e.DataSchema) + len(protobufContentType)
	for _, k := range names {
		n += len(e.Extensions[k])
	}
	buf := make([]byte, 0, n)
	hs := make([]kgo.RecordHeader, 0, 8+len(names))
	add := func(key string, v string) {
		start := len(buf)
		buf = append(buf, v...)
		hs = append(hs, kgo.RecordHeader{Key: key, Value: buf[start:len(buf):len(buf)]})
	}
	add(kafkaPrefix+"specversion", e.SpecVersion)
	add(kafkaPrefix+"id", e.ID)
	add(kafkaPrefix+"source", e.Source)
	add(kafkaPrefix+"type", e.Type)
	if e.HasTime {
		add(kafkaPrefix+"time", string(t))
	}
	if e.Subject != "" {
		add(kafkaPrefix+"subject", e.Subject)
	}
	if e.DataSchema != "" {
		add(kafkaPrefix+"dataschema", e.DataSchema)
	}
	for _, k := range names {
		add(kafkaPrefix+k, e.Extensions[k])
	}
	add(contentTypeHeader, protobufContentType)
	return hs
}
