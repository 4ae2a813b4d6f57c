package eventtest

import (
	"time"

	"github.com/sluicehq/sluice/examples"
)

// PublishBodies are POST /v1/events bodies the fuzz targets of the
// gateway and of its decoders start from: the example contracts' events,
// and near misses (an empty batch, a NUL id, deep nesting, a number out of
// range, a byte order mark).
func PublishBodies() [][]byte {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)
	event := func(typ string, payload []byte) string {
		return `{"id":"e-1","type":"` + typ + `","occurred_at":"` + at + `","partition_key":"k","payload":` + string(payload) + `}`
	}
	return [][]byte{
		[]byte(`{"events":[` + event("examples.shop.v1.OrderPlaced", examples.OrderPlacedJSON) + `]}`),
		[]byte(`{"events":[` + event("examples.identity.v1.UserProfileUpdated", examples.UserProfileUpdatedJSON) + `,` +
			event("examples.logs.v1.LogLine", examples.LogLineJSON) + `]}`),
		[]byte(`{"events":[{"id":"x","type":"examples.logs.v1.LogLine","payload":{"labels":{"a":"b"}},"attributes":{"k":"v"}}]}`),
		[]byte(`{"events":[]}`),
		[]byte(`{"events":[{"id":"\u0000","type":"","occurred_at":"0000-01-01T00:00:00Z"}]}`),
		[]byte(`{"events":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`),
		[]byte(`{"events":[{"id":"a","type":"examples.shop.v1.OrderPlaced","occurred_at":"` + at + `","payload":{"total_cents":"99999999999999999999"}}]}`),
		[]byte("\xef\xbb\xbf{}"),
	}
}
