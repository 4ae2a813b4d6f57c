package peers

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// MaxIDLen bounds a member id, and so a heartbeat's key.
const MaxIDLen = 128

// maxHeartbeatBytes bounds a heartbeat's value; a larger one is malformed
// and not decoded.
const maxHeartbeatBytes = 1024

// Heartbeat is one replica's sign of life: its id and the time it wrote
// it, by its own clock.
type Heartbeat struct {
	ID   string
	Time time.Time
}

// heartbeatJSON is a heartbeat's value on the topic: {"id":..,"time":..},
// time in RFC 3339 with nanoseconds, UTC. Keys it does not know are
// skipped, so a later version may add some.
type heartbeatJSON struct {
	ID   string `json:"id"`
	Time string `json:"time"`
}

// MalformedError is a heartbeat record that does not decode. It is
// ignored and counted; it never stops the membership.
type MalformedError struct {
	Reason string
}

func (e *MalformedError) Error() string { return "peers: malformed heartbeat: " + e.Reason }

// Encode is h's record value.
func (h Heartbeat) Encode() []byte {
	b, _ := json.Marshal(heartbeatJSON{ID: h.ID, Time: h.Time.UTC().Format(time.RFC3339Nano)})
	return b
}

// DecodeHeartbeat decodes a heartbeat record: key the member id, value
// Encode's. A record with no value is a tombstone: the member left, and
// leave is true. Anything else that is not a heartbeat of the key's member
// is a *MalformedError.
func DecodeHeartbeat(key, value []byte) (h Heartbeat, leave bool, err error) {
	id := string(key)
	if err := CheckID(id); err != nil {
		return Heartbeat{}, false, &MalformedError{Reason: "key: " + err.Error()}
	}
	if len(value) == 0 {
		return Heartbeat{ID: id}, true, nil
	}
	if len(value) > maxHeartbeatBytes {
		return Heartbeat{}, false, &MalformedError{Reason: fmt.Sprintf("value of %d bytes, over %d", len(value), maxHeartbeatBytes)}
	}
	var v heartbeatJSON
	if err := json.Unmarshal(value, &v); err != nil {
		return Heartbeat{}, false, &MalformedError{Reason: "value: " + err.Error()}
	}
	if v.ID != id {
		return Heartbeat{}, false, &MalformedError{Reason: fmt.Sprintf("value's id %q is not the key %q", clipID(v.ID), id)}
	}
	t, err := time.Parse(time.RFC3339Nano, v.Time)
	if err != nil {
		return Heartbeat{}, false, &MalformedError{Reason: "time: " + err.Error()}
	}
	return Heartbeat{ID: id, Time: t}, false, nil
}

// CheckID says why id cannot be a member id: ids are 1 to MaxIDLen bytes
// of ASCII letters, digits, '.', '_' and '-'.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("empty member id")
	case len(id) > MaxIDLen:
		return fmt.Errorf("member id of %d bytes, over %d", len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("member id %q: byte %d is not a letter, digit, '.', '_' or '-'", clipID(id), i)
		}
	}
	return nil
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// NewID is a member id for this process: the host's name, as much of it
// as is made of id bytes and at most 64 of them, then 16 random hex
// digits, so that a restarted replica is a new member and two replicas on
// one host are two.
func NewID() string {
	host, _ := os.Hostname()
	var b strings.Builder
	for i := 0; i < len(host) && b.Len() < 64; i++ {
		if idByte(host[i]) {
			b.WriteByte(host[i])
		}
	}
	if b.Len() == 0 {
		b.WriteString("gateway")
	}
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read does not fail
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(r[:]))
	return b.String()
}
