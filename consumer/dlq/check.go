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

// CheckContract checks r's value as the gateway does before it publishes:
// against the contract of the type its sluice headers name, rules
// included. A value cut by record.NewParkedCopy fails. Replay checks every
// record with it, and the consumer every record it drains: a record in a
// DLQ or parked topic may never have passed the gateway.
func CheckContract(reg *contract.Registry, r *kgo.Record) error {
	for _, h := range r.Headers {
		if h.Key == record.DLQHeaderTruncated {
			return errTruncated
		}
	}
	h, err := record.ParseEvent(r)
	if err != nil {
		return err
	}
	ct, ok := reg.Lookup(h.Type)
	if !ok {
		return fmt.Errorf("dlq: unknown event type %q", h.Type)
	}
	_, err = ct.CheckBinary(r.Value)
	return err
}
