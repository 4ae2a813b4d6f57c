package strictyaml

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// Decode decodes n into v, which holds the defaults, and refuses a key v
// has no field for. (yaml.Node.Decode does not refuse unknown keys, so n
// is decoded again from its text with a decoder that does.)
func Decode(n *yaml.Node, v any) error {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	return dec.Decode(v)
}
