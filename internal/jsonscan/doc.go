// Package jsonscan is sluice's one strict JSON tokenizer, shared by the
// decoders that read JSON by hand rather than through encoding/json or
// protojson: the gateway's envelope (gateway/envelope), the CloudEvents
// binding (gateway/cloudevents) and the contract's transcoder from JSON
// to protobuf binary (contract). A decoder owns the grammar of its
// document and asks for tokens; jsonscan owns the token syntax: string
// tokens, \u escapes and surrogate pairs (ScanString, Hex4, Unescape),
// numbers, literals, whitespace, and skipping a whole value (Skip).
//
// It reads two dialects. RFC 8259, through a Scanner, for the gateway's
// documents. protojson's, for the contract, which must accept and refuse
// what protojson does: ScanString with strict, ProtojsonNumberLen and
// SkipProtojson.
//
// # Guarantees
//
//   - RFC 8259: Skip accepts a value exactly when encoding/json's Valid
//     accepts it (FuzzSkip).
//   - protojson: what the contract's transcoder accepts through these
//     tokens, protojson accepts alike, and refuses alike
//     (contract's FuzzTranscodeJSON and FuzzJSONDecoders).
//   - A problem is the first one reading left to right, at a stable byte
//     offset: callers word it, and their messages are part of answers.
//   - Skipping never recurses on the input's nesting: it keeps one bit per
//     open container, so any depth costs depth/8 bytes and no stack;
//     SkipProtojson also stops at a depth limit.
//   - It notes what encoding/json would hide: a \u escape that is a lone
//     surrogate (Str.Lone), so a caller can refuse text that is not
//     Unicode instead of reading U+FFFD.
//   - It allocates only what a caller asks to keep: Text copies, Key
//     reuses one scratch buffer, and Skip's bit stack.
//
// # What it does not do
//
// In RFC 8259's dialect it does not check that Buf is UTF-8 (callers
// check the whole input once, which is cheaper than per token). It does
// not build values, parse numbers or know any document's fields,
// duplicate keys included.
package jsonscan
