package contract_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func TestCheckJSONDepth(t *testing.T) {
	tests := []struct {
		name  string
		json  string
		depth int // the deepest nesting in json
	}{
		{"scalar", `1`, 0},
		{"empty object", `{}`, 1},
		{"array in object", `{"a":[1,2]}`, 2},
		{"siblings do not add up", `{"a":{},"b":[],"c":{"d":[]}}`, 3},
		{"brackets in strings", `{"a":"{[{[{["}`, 1},
		{"escaped quote", `{"a":"\"{[{[","b":{}}`, 2},
		{"escaped backslash before quote", `{"a":"\\","b":{"c":[]}}`, 3},
		{"escaped quote in a key", `{"\"[":{}}`, 2},
		{"unicode escape", `{"a":"\u005b\u007b"}`, 1},
		{"arrays", `[[[[]]]]`, 4},
		{"unterminated string", `{"a":"[[[[`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for limit := max(tc.depth-1, 1); limit <= tc.depth+1; limit++ {
				err := contract.CheckJSONDepth([]byte(tc.json), limit)
				if wantOK := tc.depth <= limit; (err == nil) != wantOK {
					t.Errorf("limit %d: error %v, want ok %v", limit, err, wantOK)
				}
				var merr *contract.MalformedError
				if err != nil && !errors.As(err, &merr) {
					t.Errorf("limit %d: got %T, want *MalformedError", err, err)
				}
			}
		})
	}
}

func TestCheckJSONDepthAllocatesNothing(t *testing.T) {
	b := fixture(t, "log_line.json")
	allocs := testing.AllocsPerRun(100, func() {
		if err := contract.CheckJSONDepth(b, 32); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("CheckJSONDepth allocates %v times per call", allocs)
	}
}

// referenceDepth is the deepest nesting of valid JSON, by encoding/json.
func referenceDepth(b []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	// Numbers stay text: valid JSON may hold one no float64 can (1e700).
	dec.UseNumber()
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest, nil
		}
		if err != nil {
			return 0, err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func FuzzCheckJSONDepth(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[{"b":"[\"]"}]}`, `"\\"`, `{"a":"\u007b"}`,
		strings.Repeat("[", 40) + strings.Repeat("]", 40),
	} {
		f.Add([]byte(s), uint8(3))
	}
	for _, name := range fixtures() {
		f.Add(fixture(f, name), uint8(2))
	}
	f.Fuzz(func(t *testing.T, b []byte, limit uint8) {
		n := int(limit%40) + 1
		err := contract.CheckJSONDepth(b, n) // must not panic on any input
		if !json.Valid(b) {
			return
		}
		want, rerr := referenceDepth(b)
		if rerr != nil {
			t.Fatalf("reference: %v", rerr)
		}
		if (err == nil) != (want <= n) {
			t.Fatalf("limit %d, depth %d: CheckJSONDepth error %v", n, want, err)
		}
	})
}
