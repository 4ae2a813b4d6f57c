// Package strformat checks the well-known string formats of protovalidate's
// string rules (buf.validate.StringRules: email, hostname, ip, uri, uuid and
// the rest) without regular expressions or CEL.
//
// Each IsX function gives the same verdict as protovalidate v1.4.0 for every
// input, valid UTF-8 or not, including where protovalidate's parsers accept
// or refuse more than the RFCs they cite (the differential fuzz targets in
// this package hold that; the quirks kept on purpose are noted at the
// functions). They only answer "is it valid": protovalidate reports an empty
// value under a rule id of its own (for example "string.email_empty"), which
// is the caller's to choose; every IsX except IsURIRef and strict
// IsHTTPHeaderValue returns false for "".
//
// The functions do not allocate and are safe for concurrent use.
package strformat
