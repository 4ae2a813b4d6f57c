package peers

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHeartbeatRoundTrip(t *testing.T) {
	h := Heartbeat{ID: "gw-1.a_b", Time: time.Date(2026, 12, 5, 12, 0, 0, 123456789, time.UTC)}
	got, leave, err := DecodeHeartbeat([]byte(h.ID), h.Encode())
	if err != nil || leave || got.ID != h.ID || !got.Time.Equal(h.Time) {
		t.Fatalf("decoded %+v %v %v, want %+v", got, leave, err, h)
	}
	got, leave, err = DecodeHeartbeat([]byte(h.ID), nil)
	if err != nil || !leave || got.ID != h.ID {
		t.Fatalf("tombstone: %+v %v %v", got, leave, err)
	}
}

func TestDecodeHeartbeatRefuses(t *testing.T) {
	cases := []struct{ name, key, value string }{
		{"empty key", "", `{"id":"","time":"2026-12-05T12:00:00Z"}`},
		{"key not an id", "a b", `{"id":"a b","time":"2026-12-05T12:00:00Z"}`},
		{"long key", strings.Repeat("a", MaxIDLen+1), ""},
		{"not json", "a", `{`},
		{"not an object", "a", `[1]`},
		{"other id", "a", `{"id":"b","time":"2026-12-05T12:00:00Z"}`},
		{"no time", "a", `{"id":"a"}`},
		{"bad time", "a", `{"id":"a","time":"yesterday"}`},
		{"large", "a", `{"id":"a","time":"2026-12-05T12:00:00Z","pad":"` + strings.Repeat("x", maxHeartbeatBytes) + `"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := DecodeHeartbeat([]byte(c.key), []byte(c.value))
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("err %v, want a *MalformedError", err)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if err := CheckID(a); err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two ids alike: %s", a)
	}
}

// FuzzDecodeHeartbeat holds the decoder to: no panic; a heartbeat it
// accepts is of the key's member, with a valid id, and encodes back to a
// value that decodes to the same heartbeat.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte("gw-1"), Heartbeat{ID: "gw-1", Time: time.Unix(1, 5).UTC()}.Encode())
	f.Add([]byte("gw-1"), []byte(nil))
	f.Add([]byte("gw-1"), []byte(`{"id":"gw-1","time":"2026-12-05T12:00:00+01:00","extra":[1,{}]}`))
	f.Add([]byte("a b"), []byte(`{"id":"a b"}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		h, leave, err := DecodeHeartbeat(key, value)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *MalformedError", err)
			}
			return
		}
		if h.ID != string(key) || CheckID(h.ID) != nil {
			t.Fatalf("accepted id %q for key %q", h.ID, key)
		}
		if leave {
			return
		}
		again, leave2, err := DecodeHeartbeat(key, h.Encode())
		if err != nil || leave2 || again.ID != h.ID || !again.Time.Equal(h.Time) {
			t.Fatalf("%+v encodes to a value that decodes to %+v, %v, %v", h, again, leave2, err)
		}
	})
}
