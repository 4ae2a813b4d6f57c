// Package jsonpointer reads values out of JSON documents by RFC 6901 JSON
// pointers: the pollers' items, cursors and event fields, and the fields
// a webhook's body maps to. It is what package eventmap and package pull
// share of JSON.
//
// # Usage
//
//	raw, err := jsonpointer.Lookup(body, "/data/0/id") // one value
//	doc := jsonpointer.NewDoc(item)                    // several pointers into one document
//	id, err := doc.Lookup("/id")
//	s, err := jsonpointer.ScalarString(id)             // a string or a number, as text
//
// # What it guarantees
//
// A lookup decodes only the objects and arrays on the pointer's path, and
// a Doc decodes each of them once, however many pointers go through it.
// A value it returns is valid JSON without surrounding whitespace: the
// document's own bytes, not a re-encoding. A pointer that names nothing
// (a missing member, an index past the end, a step below a scalar) is an
// error wrapping ErrNotFound; text that is not JSON is another error. No
// input panics.
//
// "" is the whole document, "/" the member named "", "~1" a '/' and "~0"
// a '~' in a member name. An array index is digits without a leading zero;
// "-" (the element after the last) names nothing.
//
// # What it does not do
//
// It does not write or patch documents, and keeps nothing between calls
// but what a Doc memoizes, which lives as long as the Doc.
package jsonpointer
