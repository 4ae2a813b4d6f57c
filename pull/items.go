package pull

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/jsonpointer"
)

// mappingError is an item that does not map to an event. It is the item's
// fault: the item is counted as rejected and the page goes on.
type mappingError struct {
	Index int    // the item's index in its page
	Field string // mapping field: id, type, occurred_at, partition_key, payload
	Err   error
}

func (e *mappingError) Error() string {
	return fmt.Sprintf("pull: item %d: %s: %v", e.Index, e.Field, e.Err)
}

func (e *mappingError) Unwrap() error { return e.Err }

// mapItem turns one item into an event with m; fetched is the page's
// fetch time, the event time when the mapping reads none.
func mapItem(m *eventmap.Mapping, index int, item json.RawMessage, fetched time.Time) (*ingestv1.Event, error) {
	ev, err := m.Map(eventmap.Input{Doc: item, Time: fetched})
	if err != nil {
		var fe *eventmap.FieldError
		if errors.As(err, &fe) {
			return nil, &mappingError{Index: index, Field: fe.Field, Err: fe.Err}
		}
		return nil, &mappingError{Index: index, Field: "item", Err: err}
	}
	return ev, nil
}

// pageItems returns the items of a page body, doc; doc memoizes the
// body's containers for the cursor's lookup.
func pageItems(doc *jsonpointer.Doc, body []byte, items string) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	raw, err := doc.Lookup(items)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	if jsonpointer.IsNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, fmt.Errorf("items: %s is not an array", jsonpointer.KindOf(raw))
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	return out, nil
}
