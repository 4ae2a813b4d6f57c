package record

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func sampleRecord() *kgo.Record {
	return NewEvent(&Event{
		Topic: "ingest.t", Key: []byte("k"), Value: []byte{0, 1, 2, 0xff},
		ID: "e-1", Type: "t", Source: "s",
		OccurredAt: time.Unix(1, 0), IngestedAt: time.Unix(2, 0),
		Fingerprint: "sha256:00", Attributes: map[string]string{"a": "b"},
	})
}

func TestSpooledRoundTrip(t *testing.T) {
	for _, r := range []*kgo.Record{sampleRecord(), {Topic: "t"}, {Topic: "t", Key: []byte{}, Value: bytes.Repeat([]byte("v"), 1<<16)}} {
		b := AppendSpooled(nil, r)
		got, err := DecodeSpooled(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Topic != r.Topic || !bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Value, r.Value) || len(got.Headers) != len(r.Headers) {
			t.Fatalf("round trip: %+v, want %+v", got, r)
		}
		for i, h := range r.Headers {
			if got.Headers[i].Key != h.Key || !bytes.Equal(got.Headers[i].Value, h.Value) {
				t.Fatalf("header %d: %+v, want %+v", i, got.Headers[i], h)
			}
		}
		for cut := 0; cut < len(b); cut++ {
			if _, err := DecodeSpooled(b[:cut]); err == nil {
				t.Fatalf("a record cut at %d of %d decoded", cut, len(b))
			}
		}
	}
}

func FuzzDecodeSpooled(f *testing.F) {
	f.Add(AppendSpooled(nil, sampleRecord()))
	f.Add([]byte{1, 1, 't', 0, 0, 0})
	f.Add([]byte{1, 1, 't', 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeSpooled(b)
		if err != nil {
			return
		}
		// What decodes encodes back to the same bytes.
		if again := AppendSpooled(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, decoded from %x", again, b)
		}
	})
}
