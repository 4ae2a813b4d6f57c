package contract_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/contract"
)

// TestRender: a published value renders as its protojson form, and two
// encodings of one message (map entries in either order) share their
// canonical bytes; a value that does not decode is a *MalformedError.
func TestRender(t *testing.T) {
	r := loadExamples(t)
	c, ok := r.Lookup("examples.logs.v1.LogLine")
	if !ok {
		t.Fatal("no LogLine contract")
	}
	m := validLogLine()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	js, canon, err := c.Render(b)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil || got["service"] != m.GetService() {
		t.Fatalf("Render JSON %s: %v", js, err)
	}
	if !bytes.Equal(canon, b) {
		t.Fatalf("canonical bytes differ from the deterministic encoding")
	}

	// The same message with its map entries swapped: field 8 entries in
	// the other order.
	var head, entries []byte
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		size := n + protowire.ConsumeFieldValue(num, typ, rest[n:])
		if num == 8 {
			entries = append(rest[:size:size], entries...)
		} else {
			head = append(head, rest[:size]...)
		}
		rest = rest[size:]
	}
	swapped := append(head, entries...)
	if bytes.Equal(swapped, b) {
		t.Fatal("the test message has one map entry: nothing swapped")
	}
	if _, canon2, err := c.Render(swapped); err != nil || !bytes.Equal(canon2, canon) {
		t.Fatalf("another encoding of one message: canonical bytes differ (%v)", err)
	}

	_, _, err = c.Render([]byte{0x0a, 0xff})
	var me *contract.MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("Render of a truncated value = %v, want a *MalformedError", err)
	}
}
