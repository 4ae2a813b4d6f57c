package gateway

import (
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
)

// The envelope's bounds, from the rules of sluice.ingest.v1.Event
// (TestEnvelopeBoundsMatchTheContract keeps them equal), in characters;
// fields without a pattern that keeps them ASCII may take up to four bytes
// a character in UTF-8.
const (
	maxIDChars             = 128 // ASCII: ^[A-Za-z0-9][A-Za-z0-9._:-]*$
	maxTypeChars           = 200
	maxPartitionKeyChars   = 256
	maxAttributes          = 16
	maxAttributeKeyChars   = 64 // ASCII: ^[a-z0-9][a-z0-9._-]*$
	maxAttributeValueChars = 256
	utf8Max                = 4
)

// RecordLimits bounds what an event the gateway accepts puts into its Kafka
// record, for record.Limits.Sizes: the payload's binary form is at
// most Limits.MaxEventBytes (the gateway checks it after transcoding JSON),
// the envelope's fields are within the contract's rules, and the source and
// topic are one of those given (every source and poller name, every topic
// the gateway publishes to).
func (c Config) RecordLimits(sources, topics []string) record.Limits {
	longest := func(names []string) int {
		n := 0
		for _, s := range names {
			n = max(n, len(s))
		}
		return n
	}
	extraHeaders, extraBytes := webhookRecordLimits(c.Sources, c.Limits.MaxEventBytes)
	ceHeaders, ceBytes := c.cloudEventsRecordLimits()
	extraHeaders, extraBytes = extraHeaders+ceHeaders, extraBytes+ceBytes
	return record.Limits{
		ExtraHeaders: extraHeaders,
		ExtraBytes:   extraBytes,
		Value:        c.Limits.MaxEventBytes,
		ID:           maxIDChars,
		Type:         maxTypeChars * utf8Max,
		Key:          maxPartitionKeyChars * utf8Max,
		Source:       longest(sources),
		Topic:        longest(topics),
		Fingerprint:  contract.FingerprintLen,
		// A record's trace context is a traceparent of exactly its
		// length, and a tracestate within tracing's bound (a longer one
		// is dropped whole).
		Traceparent:    tracing.TraceparentLen,
		Tracestate:     tracing.MaxTracestateBytes,
		Attributes:     maxAttributes,
		AttributeKey:   maxAttributeKeyChars,
		AttributeValue: maxAttributeValueChars * utf8Max,
	}
}
