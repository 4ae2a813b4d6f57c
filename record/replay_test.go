package record

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A replayed record carries its replay's id and actor, which ParseEvent
// reads; a record replayed again names the last replay only.
func TestWithReplay(t *testing.T) {
	r := NewEvent(testEvent())
	orig := append([]kgo.RecordHeader(nil), r.Headers...)
	h, err := WithReplay(r.Headers, "3f2a9c01d4e5b6a7", "ops@example")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Headers, orig) {
		t.Fatal("WithReplay modified the headers it was given")
	}
	got, err := ParseEvent(&kgo.Record{Headers: h})
	if err != nil {
		t.Fatal(err)
	}
	if got.ReplayID != "3f2a9c01d4e5b6a7" || got.ReplayActor != "ops@example" {
		t.Fatalf("replay headers read as %q, %q", got.ReplayID, got.ReplayActor)
	}
	plain, _ := ParseEvent(r)
	got.ReplayID, got.ReplayActor = "", ""
	if !reflect.DeepEqual(got, plain) {
		t.Fatalf("the rest of the headers changed:\n got %+v\nwant %+v", got, plain)
	}

	again, err := WithReplay(h, "second", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(h) {
		t.Fatalf("a second replay left %d headers, want %d", len(again), len(h))
	}
	if got, err := ParseEvent(&kgo.Record{Headers: again}); err != nil || got.ReplayID != "second" || got.ReplayActor != "bob" {
		t.Fatalf("replayed again: %+v, %v", got, err)
	}

	for _, tc := range []struct{ id, actor, header string }{
		{"", "ops", HeaderReplayID},
		{"has space", "ops", HeaderReplayID},
		{strings.Repeat("a", MaxReplayIDBytes+1), "ops", HeaderReplayID},
		{"r1", "", HeaderReplayActor},
		{"r1", "line\nbreak", HeaderReplayActor},
		{"r1", "\xff", HeaderReplayActor},
		{"r1", strings.Repeat("é", MaxReplayActorBytes), HeaderReplayActor},
	} {
		_, err := WithReplay(orig, tc.id, tc.actor)
		var he *HeaderError
		if !errors.As(err, &he) || he.Header != tc.header {
			t.Errorf("WithReplay(%q, %q): %v, want a *HeaderError for %s", tc.id, tc.actor, err, tc.header)
		}
	}
	if _, err := WithReplay(orig, strings.Repeat("a", MaxReplayIDBytes), strings.Repeat("x", MaxReplayActorBytes)); err != nil {
		t.Errorf("WithReplay at the bounds: %v", err)
	}
}

func TestParseEventReplayErrors(t *testing.T) {
	valid := NewEvent(testEvent()).Headers
	with := func(hs ...kgo.RecordHeader) []kgo.RecordHeader { return append(valid[:len(valid):len(valid)], hs...) }
	id := kgo.RecordHeader{Key: HeaderReplayID, Value: []byte("r1")}
	actor := kgo.RecordHeader{Key: HeaderReplayActor, Value: []byte("ops")}
	for _, tc := range []struct {
		name    string
		headers []kgo.RecordHeader
		header  string
		err     error
	}{
		{"id without actor", with(id), HeaderReplayActor, errHeaderMissing},
		{"actor without id", with(actor), HeaderReplayID, errHeaderMissing},
		{"repeated id", with(id, actor, id), HeaderReplayID, errHeaderRepeated},
		{"repeated actor", with(id, actor, actor), HeaderReplayActor, errHeaderRepeated},
		{"empty id", with(kgo.RecordHeader{Key: HeaderReplayID}, actor), HeaderReplayID, errHeaderEmpty},
		{"actor with a control character", with(id, kgo.RecordHeader{Key: HeaderReplayActor, Value: []byte("a\x00")}), HeaderReplayActor, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvent(&kgo.Record{Headers: tc.headers})
			var he *HeaderError
			if !errors.As(err, &he) || he.Header != tc.header {
				t.Fatalf("got %v, want a *HeaderError for %s", err, tc.header)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("got %v, want %v", err, tc.err)
			}
		})
	}
}

// FuzzParseReplay: any replay header values give an event or a
// *HeaderError, never a panic, and replay headers ParseEvent accepts are
// what WithReplay writes back.
func FuzzParseReplay(f *testing.F) {
	f.Add("3f2a9c01d4e5b6a7", "ops", false)
	f.Add("", "", true)
	f.Add("r-1_A", "Zoë", true)
	f.Fuzz(func(t *testing.T, id, actor string, twice bool) {
		base := NewEvent(testEvent()).Headers
		hs := append(base[:len(base):len(base)],
			kgo.RecordHeader{Key: HeaderReplayID, Value: []byte(id)},
			kgo.RecordHeader{Key: HeaderReplayActor, Value: []byte(actor)})
		if twice {
			hs = append(hs, kgo.RecordHeader{Key: HeaderReplayActor, Value: []byte(actor)})
		}
		h, err := ParseEvent(&kgo.Record{Headers: hs})
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("error %v is not a *HeaderError", err)
			}
			return
		}
		back, err := WithReplay(base, h.ReplayID, h.ReplayActor)
		if err != nil {
			t.Fatalf("WithReplay refused what ParseEvent accepted: %v", err)
		}
		if again, err := ParseEvent(&kgo.Record{Headers: back}); err != nil || !reflect.DeepEqual(again, h) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, h)
		}
	})
}

// The dead letter of a replayed event, every header at its bound, is
// within DeadLetterBound in its largest form, the parked copy.
func TestDeadLetterBoundHoldsReplays(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	attrs := map[string]string{}
	for i := range maxAttributes {
		attrs[x(maxAttributeKeyBytes-2)+string(rune('a'+i/26))+string(rune('a'+i%26))] = x(maxAttributeValueBytes)
	}
	const value, maxErr = 1000, 512
	r := NewEvent(&Event{Topic: "t", Key: []byte(x(maxKeyBytes)), Value: make([]byte, value), ID: x(maxEventIDBytes),
		Type: x(maxEventTypeBytes), Source: x(maxSourceBytes), Fingerprint: x(fingerprintBytes),
		Traceparent: x(maxTraceparentBytes), Attributes: attrs})
	h, err := WithReplay(r.Headers, x(MaxReplayIDBytes), x(MaxReplayActorBytes))
	if err != nil {
		t.Fatal(err)
	}
	r.Headers = h
	env := &Envelope{Class: "transient", Error: x(maxErr), Sink: x(maxSinkNameBytes), Attempts: 1 << 30, DLQRetries: 1 << 30,
		SourceTopic: x(maxTopicBytes), SourcePartition: 1 << 30, SourceOffset: 1 << 62, Group: "group",
		ParkedReason: ParkedSourceMismatch, Refusal: x(maxErr), TruncatedFrom: 1 << 30}
	dl := NewDeadLetter("t.parked", r, env)
	if got, bound := BatchBytes(dl), DeadLetterBound(value, maxErr, "group"); got > bound {
		t.Fatalf("dead letter of a replayed event takes %d bytes, over DeadLetterBound %d", got, bound)
	}
}
