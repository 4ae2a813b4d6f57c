package gateway

import (
	"github.com/sluicehq/sluice/contract"
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
	// traceparentLen is a W3C traceparent's length; the gateway passes on
	// only one of exactly this form (see validTraceparent).
	traceparentLen = 55
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
		ExtraHeaders:   extraHeaders,
		ExtraBytes:     extraBytes,
		Value:          c.Limits.MaxEventBytes,
		ID:             maxIDChars,
		Type:           maxTypeChars * utf8Max,
		Key:            maxPartitionKeyChars * utf8Max,
		Source:         longest(sources),
		Topic:          longest(topics),
		Fingerprint:    contract.FingerprintLen,
		Traceparent:    traceparentLen,
		Attributes:     maxAttributes,
		AttributeKey:   maxAttributeKeyChars,
		AttributeValue: maxAttributeValueChars * utf8Max,
	}
}

// validTraceparent reports whether v is a W3C traceparent the gateway
// passes on to Kafka: version, trace id, parent id and flags in lowercase
// hex, 55 characters, version not ff, ids not all zero. Anything else is
// dropped, as the W3C Trace Context spec asks of a value that does not
// parse; it also bounds what a caller's header can add to a record.
func validTraceparent(v string) bool {
	if len(v) != traceparentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' || v[:2] == "ff" {
		return false
	}
	hex := func(s string) (ok, zero bool) {
		zero = true
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
				zero = zero && c == '0'
			default:
				return false, false
			}
		}
		return true, zero
	}
	for _, f := range [...]struct {
		s       string
		nonzero bool
	}{{v[0:2], false}, {v[3:35], true}, {v[36:52], true}, {v[53:55], false}} {
		ok, zero := hex(f.s)
		if !ok || f.nonzero && zero {
			return false
		}
	}
	return true
}
