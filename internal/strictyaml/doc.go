// Package strictyaml decodes a block of a sluice config file into a value
// that already holds its defaults, refusing keys the value does not have:
// a config file sets only what differs from the defaults, and a misspelt
// key is an error, not a setting silently ignored.
package strictyaml
