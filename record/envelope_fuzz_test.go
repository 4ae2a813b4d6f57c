package record

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kgo"
)

func envelopeSeed() []byte {
	env := Envelope{Class: "transient", Error: "503", Sink: "http", Attempts: 3, DLQRetries: 1,
		Retryable: true, SourceTopic: "ingest.t", SourcePartition: 1, SourceOffset: 9, Group: "g"}
	return kafkatest.HeadersToBytes(env.headers())
}

// FuzzParseEnvelope: any headers give an envelope or an *EnvelopeError,
// never a panic, and an envelope that parses writes back to itself.
func FuzzParseEnvelope(f *testing.F) {
	f.Add(envelopeSeed())
	f.Add([]byte("sluice-dlq-retries\x00-1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &kgo.Record{Headers: kafkatest.HeadersFromBytes(b)}
		env, err := ParseEnvelope(r)
		if err != nil {
			var ee *EnvelopeError
			if !errors.As(err, &ee) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		again, err := ParseEnvelope(&kgo.Record{Headers: env.headers()})
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if again != env {
			t.Fatalf("round trip changed the envelope:\n%+v\n%+v", env, again)
		}
	})
}
