package sink

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/clip"
)

var (
	// ErrClosed is wrapped by the error of a Write on a closed sink. It is
	// Transient: the sink is going away, not the event.
	ErrClosed = errors.New("sink: closed")
	// errNotFound is returned by Get for an identity the sink does not hold.
	errNotFound = errors.New("sink: event not found")
	// ErrInvalidEvent is wrapped by the Permanent error of a batch holding
	// an event no sink can store: no id or source, text that is not valid
	// UTF-8 or holds NUL or control characters where they cannot go, a
	// payload fingerprint not made by Fingerprint, or a JSON rendering that
	// is not JSON.
	ErrInvalidEvent = errors.New("sink: invalid event")
	// ErrInvalidAuditRow is wrapped by the Permanent error of an Audit
	// call holding a row no table can store: an identity Write would
	// refuse, an unknown action, or text that is not valid UTF-8 or holds
	// NUL.
	ErrInvalidAuditRow = errors.New("sink: invalid audit row")
)

// Row is an event as a table sink stores it, one column per field.
type Row struct {
	EventID           string
	EventType         string
	Source            string
	PartitionKey      string
	OccurredAt        time.Time
	IngestedAt        time.Time
	SchemaFingerprint string
	// Payload is the event's JSON; nil when the event had none. PostgreSQL
	// returns it re-encoded by jsonb (same value, other spacing and key
	// order).
	Payload []byte
	// Value is the contract message in protobuf binary.
	Value []byte
	// PayloadFingerprint is the stored event's Event.PayloadFingerprint;
	// for a row written before schema version 2, Fingerprint(Value).
	PayloadFingerprint string
	Topic              string
	KafkaPartition     int32
	KafkaOffset        int64
	// WrittenAt is when the sink wrote the row, from the sink's clock.
	WrittenAt time.Time
}

// ConflictRecord is a row of a table sink's conflicts table: a copy of an
// event that arrived under an identity the sink held with another
// payload. Row is the copy as it arrived, its PayloadFingerprint its own;
// Row.WrittenAt is when the sink first saw it (first_seen_at).
type ConflictRecord struct {
	Row
	// StoredFingerprint is the PayloadFingerprint of the row the sink kept.
	StoredFingerprint string
}

// maxEventIDLen and maxSourceLen bound the two parts of an identity: they
// are a primary key and, escaped, an HTTP header.
const (
	maxEventIDLen = 512
	maxSourceLen  = 512
)

// fingerprintPrefix names the digest of a payload fingerprint.
const fingerprintPrefix = "sha256:"

// Fingerprint returns the payload fingerprint of a message's canonical
// encoding: "sha256:" and the lowercase hex SHA-256 of canonical. The
// consumer passes the message marshaled deterministically, so that two
// encodings of one message (fields or map entries in another order) have
// one fingerprint.
func Fingerprint(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return fingerprintPrefix + hex.EncodeToString(sum[:])
}

// validFingerprint reports whether fp has the form Fingerprint returns.
func validFingerprint(fp string) bool {
	hexPart, ok := strings.CutPrefix(fp, fingerprintPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkBatch returns a Permanent error naming the first event of batch that
// no sink can store, or nil. Every sink calls it before writing anything, so
// that an event is refused the same way whatever the sink.
func checkBatch(batch []Event) error {
	for i := range batch {
		if err := checkEvent(&batch[i]); err != nil {
			return PermanentError(fmt.Errorf("event %d (source %q, id %q): %w", i,
				clip.String(batch[i].Source, 64), clip.String(batch[i].ID, 64), err))
		}
	}
	return nil
}

// checkIdentity returns why no sink can store the identity (source, id)
// wrapping sentinel, or nil.
func checkIdentity(source, id string, sentinel error) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty id", sentinel)
	case len(id) > maxEventIDLen:
		return fmt.Errorf("%w: id longer than %d bytes", sentinel, maxEventIDLen)
	case !printable(id):
		// The id is also part of an Idempotency-Key header value.
		return fmt.Errorf("%w: id must be valid UTF-8 without control characters", sentinel)
	case source == "":
		return fmt.Errorf("%w: empty source", sentinel)
	case len(source) > maxSourceLen:
		return fmt.Errorf("%w: source longer than %d bytes", sentinel, maxSourceLen)
	case !printable(source):
		// The source is the other part of the key and of the header.
		return fmt.Errorf("%w: source must be valid UTF-8 without control characters", sentinel)
	}
	return nil
}

func checkEvent(e *Event) error {
	if err := checkIdentity(e.Source, e.ID, ErrInvalidEvent); err != nil {
		return err
	}
	if !validFingerprint(e.PayloadFingerprint) {
		return fmt.Errorf("%w: payload fingerprint must be %s and 64 lowercase hex digits, got %q",
			ErrInvalidEvent, fingerprintPrefix, clip.String(e.PayloadFingerprint, 80))
	}
	for _, f := range [...]struct{ name, v string }{
		{"type", e.Type},
		{"partition key", string(e.Key)},
		{"schema fingerprint", e.SchemaFingerprint},
		{"topic", e.Topic},
		{"group", e.Group},
		{"replay id", e.ReplayID},
		{"replay actor", e.ReplayActor},
	} {
		// PostgreSQL text holds neither invalid UTF-8 nor NUL.
		if !utf8.ValidString(f.v) || strings.IndexByte(f.v, 0) >= 0 {
			return fmt.Errorf("%w: %s must be valid UTF-8 without NUL", ErrInvalidEvent, f.name)
		}
	}
	if len(e.JSON) > 0 && !json.Valid(e.JSON) {
		return fmt.Errorf("%w: JSON rendering is not valid JSON", ErrInvalidEvent)
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// conflictsSuffix names a table's conflicts table, <table>_conflicts,
// and auditSuffix its audit table, <table>_audit.
const (
	conflictsSuffix = "_conflicts"
	auditSuffix     = "_audit"
)

// maxTableNameLen leaves room for conflictsSuffix within PostgreSQL's
// 63-byte identifiers, which it would otherwise truncate silently, so
// that the conflicts table of a long name could be the table itself.
const maxTableNameLen = 63 - len(conflictsSuffix)

// validIdentifier reports whether name is a plain table name: a lowercase
// letter or underscore, then lowercase letters, digits or underscores, at
// most maxTableNameLen (53) bytes. Such a name means the same quoted or
// not; the sinks always quote it, so that a keyword ("order") works too.
func validIdentifier(name string) bool {
	if name == "" || len(name) > maxTableNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func quoteIdent(name string) string { return `"` + name + `"` }
