package consumer

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/record"
)

// FuzzDecode: any record value and headers give an event or a
// *decodeError, never a panic.
func FuzzDecode(f *testing.F) {
	versions := testVersions(f)
	good := eventRecord(f, testTopic, "id", "k", logLine(f))
	hb := kafkatest.HeadersToBytes(good.Headers)
	f.Add(hb, good.Value)
	f.Add(hb, []byte{0x0a, 0xff})
	f.Add([]byte(record.HeaderEventType+"\x00"+testType), []byte{})
	f.Fuzz(func(t *testing.T, headers, value []byte) {
		r := &kgo.Record{Topic: testTopic, Headers: kafkatest.HeadersFromBytes(headers), Value: value}
		ev, err := Decode(versions, testTopic, r)
		if err != nil {
			var de *decodeError
			if !errors.As(err, &de) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if ev.ID == "" || ev.Type != testType || len(ev.JSON) == 0 {
			t.Fatalf("decoded event %+v", ev)
		}
	})
}
