// Package fastre matches regular expressions with Go's regexp (RE2) semantics,
// as protovalidate's string.pattern rule uses them: an unanchored search, the
// verdict of regexp.MatchString. Compile fails exactly when regexp.Compile
// does.
//
// Expressions of the shapes contracts use match without the regexp engine;
// Shape names the one recognised:
//
//   - "literals", "prefix", "suffix", "contains": the expression matches a
//     few literal strings (^(card|wallet)$, ^cus_, \.json$, (?i)^(yes|no)$),
//     anchored at both ends, the start, the end or neither. Strings are
//     compared as bytes.
//   - "dfa": literals, character classes (Unicode ones included), ".",
//     alternation, groups and the repetitions *, +, ? and {n,m}, anchored by
//     ^ / \A and $ / \z or not (^[a-z0-9-]{3,32}$, ^[a-z]{2}(-[A-Z]{2})?$).
//     They compile to a DFA over runes, read as regexp reads them.
//
// Everything else, and automata past a size limit, falls back to regexp:
// (?m) anchors, ^ or $ anywhere but the ends, \b and \B.
//
// Why the shapes are exact. They work on the expression regexp/syntax parses,
// so flags are already applied: (?i) gives literals the FoldCase flag, which
// the shapes expand to the rune's whole simple-folding orbit (k matches K and
// the Kelvin sign U+212A, as in regexp), and classes come out folded; (?s)
// turns "." into any rune; (?U) changes no verdict. Without the m flag "$" is
// \z, the end of the text, never before a final newline. regexp reads the
// input as UTF-8, each invalid byte as one U+FFFD: the DFA decodes the same
// way, so a negated class or "." matches an invalid byte and \x{FFFD} does
// too. The literal shapes hold only valid UTF-8 without U+FFFD, for which
// comparing bytes is comparing runes, and a match found by bytes starts on a
// rune boundary because valid UTF-8 never starts with a continuation byte.
//
// A *Regexp is safe for concurrent use; MatchString does not allocate for
// the shapes.
package fastre
