// Package fastre matches regular expressions with Go's regexp (RE2) semantics,
// as protovalidate's string.pattern rule uses them: an unanchored search, the
// verdict of regexp.MatchString. It recognises the shapes contracts commonly
// use (see Shape) and matches them without the regexp engine; every other
// expression is matched by regexp itself.
//
// A shape is recognised only where its meaning under RE2 is certain: Go's
// regexp reads the input as UTF-8 runes, each invalid byte a U+FFFD, so a
// negated class or "." matches an invalid byte while an ASCII class never
// does; "$" without the m flag means the end of the text (never before a
// final newline); and flags (?i), (?m), (?s) or (?U) change what an
// expression means. Anything the recognisers do not understand falls back.
//
// A *Regexp is safe for concurrent use.
package fastre
