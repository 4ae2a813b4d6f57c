// Package jsonscan is sluice's strict JSON tokenizer, shared by the
// decoders that read JSON by hand rather than through encoding/json: the
// gateway's envelope (gateway/envelope) and the CloudEvents binding
// (gateway/cloudevents). A decoder owns the grammar of its document and
// asks the Scanner for tokens; the Scanner owns RFC 8259's token syntax.
//
// # Guarantees
//
//   - It accepts exactly RFC 8259's tokens: Skip accepts a value exactly
//     when encoding/json's Valid accepts it (FuzzSkip).
//   - It never recurses on the input's nesting: Skip keeps one bit per
//     open container, so any depth costs depth/8 bytes and no stack.
//   - It notes what encoding/json would hide: a \u escape that is a lone
//     surrogate (Str.Lone), so a caller can refuse text that is not
//     Unicode instead of reading U+FFFD.
//   - It allocates only what a caller asks to keep: Text copies, Key
//     reuses one scratch buffer, and Skip's bit stack.
//
// # What it does not do
//
// It does not check that Buf is UTF-8 (callers check the whole input
// once, which is cheaper than per token), does not build values, and
// knows no document's fields, duplicate keys included.
package jsonscan
