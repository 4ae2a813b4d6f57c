package cloudevents

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

// The HTTP binding's media types.
const (
	structuredType = "application/cloudevents+json"
	batchType      = "application/cloudevents-batch+json"
	// The prefixes that choose a mode (matched case-insensitively), the
	// batch one first: it starts with the other.
	batchPrefix      = "application/cloudevents-batch"
	structuredPrefix = "application/cloudevents"
)

// quoteMax bounds what a message quotes of the input.
const quoteMax = 64

// quote is s quoted for a message, cut to quoteMax bytes.
func quote(s string) string { return fmt.Sprintf("%q", clip.String(s, quoteMax)) }

// Decode reads one request of the CloudEvents HTTP binding, version 1.0:
// h is its header (Content-Type and, in binary mode, the ce-* headers)
// and body its body, read whole by the caller. The mode comes from
// Content-Type as the binding says: application/cloudevents-batch+json is
// batch mode, application/cloudevents+json structured mode, anything else
// binary mode when a ce-specversion header is present.
//
// A request that cannot be read is refused whole (the *Refusal): a body
// over l.MaxBodyBytes or a batch past l.MaxEvents (BATCH_TOO_LARGE), a
// media type or event format sluice does not read, a body that is not
// UTF-8 or not JSON, or no CloudEvent at all (MALFORMED). Otherwise each
// event is judged on its own, and Decoded.Refused says which are refused
// and why. Decode never panics, never recurses on the input's nesting,
// and copies what it keeps, so the caller may reuse body.
func Decode(h http.Header, body []byte, l Limits) (Decoded, *Refusal) {
	if len(body) > l.MaxBodyBytes {
		return Decoded{}, &Refusal{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Msg: fmt.Sprintf("body of %d bytes is over the limit of %d", len(body), l.MaxBodyBytes)}
	}
	cts := h.Values("Content-Type")
	if len(cts) > 1 {
		return Decoded{}, requestMalformed("Content-Type", "more than one Content-Type header")
	}
	var ct string
	if len(cts) == 1 {
		ct = cts[0]
	}
	lower := strings.ToLower(strings.TrimLeft(ct, " \t"))
	switch {
	case strings.HasPrefix(lower, batchPrefix):
		if r := formatProblem(ct, batchType); r != nil {
			return Decoded{}, r
		}
		return decodeBatch(body, &l)
	case strings.HasPrefix(lower, structuredPrefix):
		if r := formatProblem(ct, structuredType); r != nil {
			return Decoded{}, r
		}
		return decodeStructured(body, &l)
	case hasSpecVersionHeader(h):
		return decodeBinary(h, ct, body, &l), nil
	}
	return Decoded{}, requestMalformed("Content-Type", fmt.Sprintf(
		"not a CloudEvents request: Content-Type %s is neither %s nor %s, and there is no ce-specversion header (binary mode)",
		quote(ct), structuredType, batchType))
}

func requestMalformed(field, msg string) *Refusal {
	return &Refusal{Reason: ingestv1.Reason_MALFORMED, Field: field, Msg: msg}
}

// formatProblem refuses a CloudEvents media type other than want, or a
// charset other than UTF-8 (JSON is UTF-8).
func formatProblem(ct, want string) *Refusal {
	mt, params, err := parseMediaType(ct)
	if err != nil {
		return requestMalformed("Content-Type", fmt.Sprintf("Content-Type %s: %v", quote(ct), err))
	}
	if mt != want {
		return requestMalformed("Content-Type", fmt.Sprintf(
			"event format %s is not supported: sluice reads %s and %s", quote(mt), structuredType, batchType))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return requestMalformed("Content-Type", fmt.Sprintf("charset %s is not supported: JSON is UTF-8", quote(cs)))
	}
	return nil
}

// hasSpecVersionHeader reports whether h has ce-specversion, in any
// letter case.
func hasSpecVersionHeader(h http.Header) bool {
	if _, ok := h["Ce-Specversion"]; ok {
		return true
	}
	for k := range h {
		if strings.EqualFold(k, "ce-specversion") {
			return true
		}
	}
	return false
}

// dataKind is what a datacontenttype says about data.
type dataKind uint8

const (
	kindAbsent   dataKind = iota // no datacontenttype
	kindJSON                     // */json or */*+json
	kindProtobuf                 // application/protobuf, application/x-protobuf
	kindOther                    // anything else: no contract reads it
)

// classify reads a datacontenttype; problem is why it is not one sluice
// reads, or "".
func classify(ct string) (kind dataKind, problem string) {
	if ct == "" {
		return kindAbsent, ""
	}
	mt, params, err := parseMediaType(ct)
	if err != nil {
		return kindOther, fmt.Sprintf("%s is not a media type: %v", quote(ct), err)
	}
	_, sub, _ := strings.Cut(mt, "/")
	switch {
	case sub == "json" || strings.HasSuffix(sub, "+json"):
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return kindOther, fmt.Sprintf("%s: charset %s is not supported: JSON is UTF-8", quote(ct), quote(cs))
		}
		return kindJSON, ""
	case mt == "application/protobuf" || mt == "application/x-protobuf":
		return kindProtobuf, ""
	}
	return kindOther, fmt.Sprintf("%s is not supported: a contract reads JSON (application/json, */*+json) or protobuf (application/protobuf, application/x-protobuf)", quote(ct))
}

// parseMediaType is mime.ParseMediaType of an RFC 2046 media type, which
// has a type and a subtype (mime takes a lone token too, as
// Content-Disposition has).
func parseMediaType(ct string) (string, map[string]string, error) {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", nil, err
	}
	if typ, sub, ok := strings.Cut(mt, "/"); !ok || typ == "" || sub == "" {
		return "", nil, fmt.Errorf("no type/subtype")
	}
	return mt, params, nil
}
