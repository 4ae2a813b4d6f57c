package cloudevents

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/jsonscan"
)

// Data becomes the payload in the form a contract reads:
//   - data with a JSON datacontenttype (*/json, */*+json, or none, which
//     the JSON format reads as application/json): the JSON value's text as
//     sent. A contract message is an object; data of another JSON value (a
//     string, a number, null) is decoded here and refused by the contract
//     check (MALFORMED), as a pushed payload that is not an object is;
//   - data_base64: the bytes; with a JSON datacontenttype they must be one
//     JSON value in UTF-8 and become the JSON payload; with
//     application/protobuf, application/x-protobuf or none they are the
//     contract message in protobuf binary (the JSON format makes no
//     assumption of JSON for bytes without a type);
//   - binary mode: the body, JSON for a JSON Content-Type (one JSON value
//     in UTF-8), else protobuf binary for application/protobuf,
//     application/x-protobuf or no Content-Type. An empty body is no data,
//     but for protobuf, where it is a message of default fields;
//   - any other datacontenttype (text/plain, application/xml, ...) is
//     refused, MALFORMED naming it: a contract reads JSON or protobuf.
//     So is protobuf in data rather than data_base64.

// dataField names the member or body data came in, for refusals.
const (
	fieldData       = "data"
	fieldDataBase64 = "data_base64"
)

// tooLarge refuses data of n bytes past lim.MaxEventBytes.
func (b *builder) tooLarge(field string, n int) bool {
	if n > b.lim.MaxEventBytes {
		b.fail(ingestv1.Reason_EVENT_TOO_LARGE, field, fmt.Sprintf(
			"%s of %d bytes is over the limit of %d", field, n, b.lim.MaxEventBytes))
		return true
	}
	return false
}

// kind classifies the event's datacontenttype, refusing one no contract
// reads when the event has data.
func (b *builder) kind() (dataKind, bool) {
	k, problem := classify(b.ev.DataContentType)
	if problem != "" {
		b.malformed("datacontenttype", "datacontenttype "+problem)
		return k, false
	}
	return k, true
}

// mediaTypeOnly refuses a datacontenttype that is not a media type, for
// an event without data: the spec asks for RFC 2046 whether or not there
// is data, and a type no contract reads harms nothing without data.
func (b *builder) mediaTypeOnly() {
	if ct := b.ev.DataContentType; ct != "" {
		if _, _, err := parseMediaType(ct); err != nil {
			b.malformed("datacontenttype", fmt.Sprintf("datacontenttype %s is not a media type: %v", quote(ct), err))
		}
	}
}

// jsonFormatData sets the data of a JSON-format event: raw is the data
// member's JSON value (nil when absent), b64 the text of data_base64 (nil
// when absent or null).
func (b *builder) jsonFormatData(raw, b64 []byte) {
	if raw == nil && b64 == nil {
		b.mediaTypeOnly()
		return
	}
	if raw != nil && b64 != nil {
		b.malformed(fieldDataBase64, "data and data_base64 are both present: an event has one")
		return
	}
	k, ok := b.kind()
	if !ok {
		return
	}
	if raw != nil {
		switch k {
		case kindAbsent, kindJSON: // absent is application/json in the JSON format
			if !b.tooLarge(fieldData, len(raw)) {
				b.ev.JSON = string(raw)
			}
		default: // protobuf
			b.malformed(fieldData, "data: protobuf data comes as data_base64, not data")
		}
		return
	}
	// Text of c characters but line breaks (which the decoder skips)
	// decodes to at least c*3/4-2 bytes: refuse what is surely too large
	// before allocating for it.
	c := len(b64) - bytes.Count(b64, []byte{'\n'}) - bytes.Count(b64, []byte{'\r'})
	if b.tooLarge(fieldDataBase64, c*3/4-2) {
		return
	}
	bin := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(bin, b64)
	if err != nil {
		b.malformed(fieldDataBase64, "data_base64: not base64: "+err.Error())
		return
	}
	bin = bin[:n]
	if b.tooLarge(fieldDataBase64, n) {
		return
	}
	switch k {
	case kindJSON:
		if p := jsonProblem(bin); p != "" {
			b.malformed(fieldDataBase64, "data_base64: datacontenttype says JSON, but "+p)
			return
		}
		b.ev.JSON = string(bin)
	default: // protobuf, or no datacontenttype: bytes the contract reads as protobuf binary
		b.ev.Binary = bin
	}
}

// binaryModeData sets the data of a binary-mode event, the body.
func (b *builder) binaryModeData(body []byte) {
	if len(body) == 0 {
		if k, _ := classify(b.ev.DataContentType); k != kindProtobuf {
			b.mediaTypeOnly()
			return // no data; but an empty protobuf body is a message of default fields
		}
	}
	k, ok := b.kind()
	if !ok {
		return
	}
	if b.tooLarge(fieldData, len(body)) {
		return
	}
	switch k {
	case kindJSON:
		if p := jsonProblem(body); p != "" {
			b.malformed(fieldData, "data: Content-Type says JSON, but "+p)
			return
		}
		b.ev.JSON = string(body)
	default: // protobuf, or no Content-Type: bytes the contract reads as protobuf binary
		b.ev.Binary = bytes.Clone(body)
		if b.ev.Binary == nil {
			b.ev.Binary = []byte{}
		}
	}
}

// jsonProblem says why b is not one JSON value in UTF-8, or returns "".
func jsonProblem(b []byte) string {
	if !utf8.Valid(b) {
		return "it is not valid UTF-8"
	}
	sc := jsonscan.Scanner{Buf: b}
	if err := sc.Skip(); err != nil {
		return "it is not JSON: " + err.Error()
	}
	if sc.Ws(); sc.Pos != len(b) {
		return fmt.Sprintf("it is not JSON: data after the value at offset %d", sc.Pos)
	}
	return ""
}
