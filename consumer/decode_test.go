package consumer

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/sink"
)

// logLineWith returns a valid LogLine in protobuf binary, as the gateway
// publishes a JSON payload, with message in place of the example's.
func logLineWith(t testing.TB, message string) []byte {
	t.Helper()
	c, ok := testRegistry(t).Lookup(testType)
	if !ok {
		t.Fatal("no LogLine contract")
	}
	js := strings.Replace(string(examples.LogLineJSON), "payment provider timed out after 3 attempts", message, 1)
	b, err := c.CheckJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reversed returns b, a protobuf message, with its top-level fields in the
// reverse order: another encoding of the same message, map entries
// included.
func reversed(t testing.TB, b []byte) []byte {
	t.Helper()
	var fields [][]byte
	for len(b) > 0 {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			t.Fatalf("not a protobuf message: %v", protowire.ParseError(n))
		}
		fields = append(fields, b[:n])
		b = b[n:]
	}
	slices.Reverse(fields)
	return bytes.Join(fields, nil)
}

// TestDecodeFingerprint: the payload fingerprint names the message, not
// its encoding. For a value the gateway encoded it is the digest of the
// value itself, which is what a schema version 2 migration computes for
// the rows it finds.
func TestDecodeFingerprint(t *testing.T) {
	versions := testVersions(t)
	published := logLine(t)
	want := sink.Fingerprint(published)
	if bytes.Equal(reversed(t, published), published) {
		t.Fatal("the reordered encoding is the published one: the test would prove nothing")
	}
	for _, tc := range []struct {
		name  string
		value []byte
		same  bool
	}{
		{"as the gateway encodes it", published, true},
		{"fields and map entries in another order", reversed(t, published), true},
		{"a field repeated, the last one winning", append(logLineWith(t, "overwritten"), published...), true},
		{"another message", logLineWith(t, "another message"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Decode(versions, testTopic, eventRecord(t, testTopic, "id-1", "k", tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ev.Value, tc.value) {
				t.Error("Decode changed the value the sink stores")
			}
			if got := ev.PayloadFingerprint == want; got != tc.same {
				t.Errorf("PayloadFingerprint = %s, want it equal to %s: %v", ev.PayloadFingerprint, want, tc.same)
			}
		})
	}
}

// TestDecodeTraceID: the event's TraceID is its record's traceparent's
// trace id, none when the record has no traceparent or a malformed one.
func TestDecodeTraceID(t *testing.T) {
	versions := testVersions(t)
	for _, tc := range []struct{ traceparent, want string }{
		{"", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"not a traceparent", ""},
	} {
		r := eventRecord(t, testTopic, "e1", "k", logLine(t))
		if tc.traceparent != "" {
			r = withTraceparent(r, tc.traceparent)
		}
		ev, err := Decode(versions, testTopic, r)
		if err != nil {
			t.Fatalf("%q: %v", tc.traceparent, err)
		}
		if ev.TraceID != tc.want {
			t.Errorf("traceparent %q: TraceID %q, want %q", tc.traceparent, ev.TraceID, tc.want)
		}
	}
}

// BenchmarkDecode: what reading the trace id adds to a record's decode,
// without and with a traceparent.
func BenchmarkDecode(b *testing.B) {
	versions := testVersions(b)
	v := logLine(b)
	for _, tc := range []struct{ name, traceparent string }{
		{"traceparent=none", ""},
		{"traceparent=valid", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := eventRecord(b, testTopic, "e1", "k", v)
			if tc.traceparent != "" {
				r = withTraceparent(r, tc.traceparent)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(versions, testTopic, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
