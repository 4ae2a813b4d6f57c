package contract

import (
	"encoding/json"
	"testing"
)

// SchemaDocument is root with defs as "$defs", the refs' target, for
// jsonschematest.Compile.
func SchemaDocument(tb testing.TB, root *Schema, defs map[string]*Schema) []byte {
	tb.Helper()
	b, err := json.Marshal(map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$defs":   defs,
		"allOf":   []*Schema{root},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
