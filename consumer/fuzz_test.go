package consumer

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/publish"
)

// headersFromBytes splits b into header key/value pairs: each pair is a
// key and a value separated by 0x00, pairs separated by 0x01.
func headersFromBytes(b []byte) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	start := 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == 0x01 {
			pair := b[start:i]
			start = i + 1
			k, v := pair, []byte(nil)
			for j, c := range pair {
				if c == 0 {
					k, v = pair[:j], pair[j+1:]
					break
				}
			}
			hs = append(hs, kgo.RecordHeader{Key: string(k), Value: v})
		}
	}
	return hs
}

func envelopeSeed() []byte {
	env := Envelope{Class: "transient", Error: "503", Sink: "http", Attempts: 3, DLQRetries: 1,
		Retryable: true, SourceTopic: testTopic, SourcePartition: 1, SourceOffset: 9, Group: "g"}
	var b []byte
	for i, h := range env.headers() {
		if i > 0 {
			b = append(b, 0x01)
		}
		b = append(b, h.Key...)
		b = append(b, 0)
		b = append(b, h.Value...)
	}
	return b
}

// FuzzParseEnvelope: any headers give an envelope or an *EnvelopeError,
// never a panic, and an envelope that parses writes back to itself.
func FuzzParseEnvelope(f *testing.F) {
	f.Add(envelopeSeed())
	f.Add([]byte("sluice-dlq-retries\x00-1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &kgo.Record{Headers: headersFromBytes(b)}
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

// FuzzDecode: any record value and headers give an event or a
// *DecodeError, never a panic.
func FuzzDecode(f *testing.F) {
	reg := testRegistry(f)
	good := eventRecord(f, testTopic, "id", "k", logLine(f))
	var hb []byte
	for i, h := range good.Headers {
		if i > 0 {
			hb = append(hb, 0x01)
		}
		hb = append(hb, h.Key...)
		hb = append(hb, 0)
		hb = append(hb, h.Value...)
	}
	f.Add(hb, good.Value)
	f.Add(hb, []byte{0x0a, 0xff})
	f.Add([]byte(publish.HeaderEventType+"\x00"+testType), []byte{})
	f.Fuzz(func(t *testing.T, headers, value []byte) {
		r := &kgo.Record{Topic: testTopic, Headers: headersFromBytes(headers), Value: value}
		ev, err := Decode(reg, testTopic, r)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if ev.ID == "" || ev.Type != testType || len(ev.JSON) == 0 {
			t.Fatalf("decoded event %+v", ev)
		}
	})
}
