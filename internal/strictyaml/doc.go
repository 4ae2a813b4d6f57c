// Package strictyaml checks and decodes a sluice config file's nodes into
// values that already hold their defaults. Check walks a node against the
// Go type it is decoded into and refuses a key the type has no field for
// (naming the nearest one), a key given twice, and a value its field
// cannot take, with the line, column and YAML path of the value and what
// the field takes: a config file sets only what differs from the
// defaults, and a misspelt key is an error, not a setting silently
// ignored.
package strictyaml
