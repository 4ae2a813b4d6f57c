package dlq

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/record"
)

// errTruncated is a parked copy whose value was cut: it is not the event.
var errTruncated = errors.New("dlq: value truncated (" + record.DLQHeaderTruncated + ")")

// Contracts are the versions of each event type a record is read with:
// Lookup returns the version of typ whose fingerprint is fingerprint and
// true when it is kept, else the newest version of typ and false, or nil
// and false for a type never served. *contract.Versions is one.
type Contracts interface {
	Lookup(typ, fingerprint string) (*contract.Contract, bool)
}

// UnknownVersionError is a record published under a schema version that
// is not kept, whose value the newest version of its type cannot read
// without loss. It is not the record's fault and may not last: a reload
// that brings the version back makes the record readable.
type UnknownVersionError struct {
	// Type is the record's event type, Fingerprint the schema version it
	// was published under, Newest the fingerprint of the version that
	// could not read it.
	Type, Fingerprint, Newest string
	// Err is why the newest version could not read it.
	Err error
}

func (e *UnknownVersionError) Error() string {
	return fmt.Sprintf("dlq: %s version %s is not kept and the newest, %s, cannot read it: %v",
		e.Type, e.Fingerprint, e.Newest, e.Err)
}

func (e *UnknownVersionError) Unwrap() error { return e.Err }

// Version returns the contract a value of typ published under the schema
// version fingerprint is read with, and whether it is that version: the
// version itself when cs keeps it; otherwise the newest version of typ,
// only when value is readable by it without loss. Readable is
// Contract.DecodeBinary's verdict (unknown fields, wrong wire types,
// invalid UTF-8 and nesting past the limit refused), since
// Contract.Render, which the consumer renders with, drops unknown fields
// unseen. A value the newest cannot read is an *UnknownVersionError. The
// rules are not run.
func Version(cs Contracts, typ, fingerprint string, value []byte) (c *contract.Contract, kept bool, err error) {
	c, kept = cs.Lookup(typ, fingerprint)
	if c == nil {
		return nil, false, fmt.Errorf("dlq: unknown event type %q", typ)
	}
	if kept {
		return c, true, nil
	}
	if _, err := c.DecodeBinary(value); err != nil {
		return nil, false, &UnknownVersionError{Type: typ, Fingerprint: fingerprint, Newest: c.Fingerprint(), Err: err}
	}
	return c, false, nil
}

// CheckContract checks r's value as the gateway does before it publishes:
// against the contract of the type and schema version its sluice headers
// name, rules included. A version cs does not keep is checked against the
// newest version of the type when Version finds the value readable by it;
// otherwise the error is an *UnknownVersionError. A value cut by
// record.NewParkedCopy fails. Replay checks every record with it, and the
// consumer every record it drains: a record in a DLQ or parked topic may
// never have passed the gateway.
func CheckContract(cs Contracts, r *kgo.Record) error {
	for _, h := range r.Headers {
		if h.Key == record.DLQHeaderTruncated {
			return errTruncated
		}
	}
	h, err := record.ParseEvent(r)
	if err != nil {
		return err
	}
	ct, _, err := Version(cs, h.Type, h.Fingerprint, r.Value)
	if err != nil {
		return err
	}
	_, err = ct.CheckBinary(r.Value)
	return err
}
