package cloudevents_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/gateway/cloudevents"
)

// fuzzLimits are small, so that the fuzzer reaches every bound.
func fuzzLimits() cloudevents.Limits {
	return cloudevents.Limits{MaxEvents: 4, MaxBodyBytes: 64 << 10, MaxEventBytes: 512, MaxAttributes: 3, MaxContextBytes: 1024}
}

// checkDecoded holds what Decode returned to its contract: a refused
// request has no events; otherwise Refused is nil or one per event; an
// accepted event has the required attributes, text without control
// characters, data within the limit and in one form, at most
// MaxAttributes extensions besides partitionkey, and ce_* headers within
// RecordHeaderBytes; every refusal is bounded.
func checkDecoded(t *testing.T, l cloudevents.Limits, dec cloudevents.Decoded, refused *cloudevents.Refusal) {
	t.Helper()
	if refused != nil {
		checkBounded(t, "request", refused)
		if dec.Events != nil || dec.Refused != nil {
			t.Fatalf("a refused request with events: %+v", dec)
		}
		return
	}
	if dec.Refused != nil && len(dec.Refused) != len(dec.Events) {
		t.Fatalf("%d refusals for %d events", len(dec.Refused), len(dec.Events))
	}
	if len(dec.Events) > l.MaxEvents {
		t.Fatalf("%d events, over the limit %d", len(dec.Events), l.MaxEvents)
	}
	for i := range dec.Events {
		e := &dec.Events[i]
		if dec.Refused != nil && dec.Refused[i] != nil {
			checkBounded(t, "event", dec.Refused[i])
			continue
		}
		if e.SpecVersion != "1.0" || e.ID == "" || e.Source == "" || e.Type == "" {
			t.Fatalf("accepted without its required attributes: %+v", e)
		}
		for _, s := range []string{e.ID, e.Source, e.Type, e.Subject, e.DataSchema, e.DataContentType, e.PartitionKey} {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }) {
				t.Fatalf("accepted text that is not a CloudEvents String: %q", s)
			}
		}
		if e.HasTime && timestamppb.New(e.Time).CheckValid() != nil {
			t.Fatalf("time %v is no occurred_at", e.Time)
		}
		if e.JSON != "" && e.Binary != nil {
			t.Fatalf("data in two forms: %+v", e)
		}
		if len(e.JSON) > l.MaxEventBytes || len(e.Binary) > l.MaxEventBytes {
			t.Fatalf("data of %d+%d bytes, over the limit %d", len(e.JSON), len(e.Binary), l.MaxEventBytes)
		}
		if e.JSON != "" && (!json.Valid([]byte(e.JSON)) || !utf8.ValidString(e.JSON)) {
			t.Fatalf("JSON data that is not JSON: %q", e.JSON)
		}
		if n := len(e.Attributes()); n > l.MaxAttributes {
			t.Fatalf("%d attributes, over the limit %d", n, l.MaxAttributes)
		}
		n := 0
		for _, h := range cloudevents.RecordHeaders(e) {
			n += len(h.Key) + len(h.Value)
		}
		if n > l.RecordHeaderBytes() {
			t.Fatalf("ce_* headers of %d bytes, over the bound %d", n, l.RecordHeaderBytes())
		}
	}
}

// addSpecSeeds adds the spec's examples to a fuzz corpus.
func addSpecSeeds(f *testing.F, suffix string) {
	names, err := filepath.Glob(filepath.Join("testdata", "spec", "*"+suffix))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzDecodeStructured: Decode never panics and keeps its contract on a
// structured body, and where the CloudEvents Go SDK's own JSON reader
// also accepts the event, the two read the same attributes and data.
func FuzzDecodeStructured(f *testing.F) {
	addSpecSeeds(f, ".json")
	for _, s := range []string{
		structured(`,"time":"2018-04-05T17:31:00.5+01:00","subject":"s","ext":5,"b":true,"partitionkey":"k","data":{"a":[1,2]}}`),
		structured(`,"datacontenttype":"application/json","data_base64":"eyJhIjoxfQ=="`),
		structured(`,"dataschema":"https://x.example/s","data":"str"`),
		structured(`,"ext":"\u00e9\ud83d\ude00","data":null`),
		structured(`,"datacontenttype":"application/vnd.x+json","data":"str"`),
		structured(`,"datacontenttype":"Application/JSON","data":{"a":1}`),
	} {
		f.Add([]byte(s))
	}
	l := fuzzLimits()
	f.Fuzz(func(t *testing.T, body []byte) {
		dec, refused := cloudevents.Decode(structuredHeader, body, l)
		checkDecoded(t, l, dec, refused)
		if refused != nil || dec.Refused != nil {
			return
		}
		var sdk event.Event
		if err := json.Unmarshal(body, &sdk); err != nil || sdk.Validate() != nil {
			return
		}
		sameAsSDK(t, dec.Events[0], sdk, body)
	})
}

// sameAsSDK fails t unless e and the SDK's reading of the same event
// agree. The SDK re-renders source and dataschema as URLs, so they are
// compared as url.Parse renders the text Decode kept.
func sameAsSDK(t *testing.T, e cloudevents.Event, sdk event.Event, body []byte) {
	t.Helper()
	urlText := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return "unparsable " + s
		}
		return u.String()
	}
	diff := func(what string, got, want any) {
		t.Fatalf("%s: Decode read %q, the SDK %q, from %q", what, got, want, body)
	}
	switch {
	case e.ID != sdk.ID():
		diff("id", e.ID, sdk.ID())
	case urlText(e.Source) != sdk.Source():
		diff("source", e.Source, sdk.Source())
	case e.Type != sdk.Type():
		diff("type", e.Type, sdk.Type())
	case e.Subject != sdk.Subject():
		diff("subject", e.Subject, sdk.Subject())
	case (e.HasTime && !e.Time.IsZero()) != !sdk.Time().IsZero() || !e.Time.Equal(sdk.Time()):
		// The SDK takes year 1's first instant for no time.
		diff("time", e.Time, sdk.Time())
	case e.DataSchema != "" && urlText(e.DataSchema) != sdk.DataSchema() || e.DataSchema == "" && sdk.DataSchema() != "":
		diff("dataschema", e.DataSchema, sdk.DataSchema())
	case e.DataContentType != sdk.DataContentType():
		diff("datacontenttype", e.DataContentType, sdk.DataContentType())
	}
	exts := sdk.Extensions()
	if len(exts) != len(e.Extensions) {
		diff("extensions", fmt.Sprint(e.Extensions), fmt.Sprint(exts))
	}
	for k, v := range e.Extensions {
		s, err := types.Format(exts[k])
		if err != nil || s != v {
			diff("extension "+k, v, s)
		}
	}
	data := []byte(e.JSON)
	if e.Binary != nil {
		data = e.Binary
	}
	if e.JSON != "" && !sdkReadsJSON(sdk) {
		// The spec reads a data member as JSON for any JSON media type
		// (*/json, */*+json, in any case); the SDK only for four exact
		// names, and unquotes a string for the rest. Decode must keep the
		// member's JSON text as sent, which encoding/json also holds.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("Decode and the SDK read an object encoding/json does not: %v: %q", err, body)
		}
		if raw, ok := members["data"]; ok {
			if e.JSON != string(raw) {
				diff("data", e.JSON, string(raw))
			}
			return
		}
	}
	if !bytes.Equal(data, sdk.Data()) {
		diff("data", data, sdk.Data())
	}
}

// sdkReadsJSON says whether the SDK keeps the data member of sdk as JSON
// text, which it does for no datacontenttype and four exact media types.
func sdkReadsJSON(sdk event.Event) bool {
	mt, _ := sdk.Context.GetDataMediaType()
	switch mt {
	case "", event.ApplicationJSON, event.TextJSON, event.ApplicationCloudEventsJSON, event.ApplicationCloudEventsBatchJSON:
		return true
	}
	return false
}

// FuzzDecodeBatch: Decode keeps its contract on a batch body, and each
// event of a batch it reads is read the same way, and refused for the
// same reason, when it is sent alone in structured mode.
func FuzzDecodeBatch(f *testing.F) {
	addSpecSeeds(f, ".json")
	f.Add([]byte("[" + structured("") + `,"x",` + structured(`,"data":{}`) + "]"))
	f.Add([]byte("[" + structured(`,"id":"dup"`) + "," + structured(`,"ext":1.5`) + "]"))
	l := fuzzLimits()
	f.Fuzz(func(t *testing.T, body []byte) {
		dec, refused := cloudevents.Decode(batchHeader(), body, l)
		checkDecoded(t, l, dec, refused)
		if refused != nil {
			return
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil {
			t.Fatalf("Decode read a batch encoding/json does not: %v: %q", err, body)
		}
		if len(elems) != len(dec.Events) {
			t.Fatalf("%d events, encoding/json reads %d elements: %q", len(dec.Events), len(elems), body)
		}
		for i, elem := range elems {
			alone, whole := cloudevents.Decode(structuredHeader, elem, l)
			var wasRefused, isRefused *cloudevents.Refusal
			if dec.Refused != nil {
				wasRefused = dec.Refused[i]
			}
			switch {
			case whole != nil:
				// Not an object: the batch refused just that element.
				if wasRefused == nil || bytes.HasPrefix(bytes.TrimSpace(elem), []byte("{")) {
					t.Fatalf("event %d: alone the request is refused (%v), in the batch %v: %q", i, whole, wasRefused, elem)
				}
				continue
			case alone.Refused != nil:
				isRefused = alone.Refused[0]
			}
			if (wasRefused == nil) != (isRefused == nil) || wasRefused != nil && (wasRefused.Reason != isRefused.Reason || wasRefused.Field != isRefused.Field) {
				t.Fatalf("event %d: refused %v in the batch, %v alone: %q", i, wasRefused, isRefused, elem)
			}
			if wasRefused == nil && fmt.Sprintf("%+v", alone.Events[0]) != fmt.Sprintf("%+v", dec.Events[i]) {
				t.Fatalf("event %d: %+v in the batch, %+v alone", i, dec.Events[i], alone.Events[0])
			}
		}
	})
}

// FuzzDecodeBinary: Decode keeps its contract on binary-mode headers (a
// line "name: value" each, then a blank line and the body), and an event
// it accepts reads the same again after its attributes are percent-encoded
// as the binding says, and the same in structured mode.
func FuzzDecodeBinary(f *testing.F) {
	for _, name := range []string{"json-object-data.binary", "json-base64-no-type.binary", "json-string-data.binary", "http-binary.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "spec", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("ce-specversion: 1.0\nce-id: %41\nce-source: \"/a b\"\nce-type: t\nce-subject: Euro%20%E2%82%AC\nce-partitionkey: k\nContent-Type: application/protobuf\n\n\x08\x01"))
	l := fuzzLimits()
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, body := parseHeaders(raw)
		dec, refused := cloudevents.Decode(h, body, l)
		checkDecoded(t, l, dec, refused)
		if refused != nil || dec.Mode != cloudevents.Binary || dec.Refused != nil {
			return
		}
		e := dec.Events[0]

		again, refused := cloudevents.Decode(encodeBinary(&e), body, l)
		if refused != nil || again.Refused != nil {
			t.Fatalf("percent-encoded again, the event is refused: %v %v; was %+v", refused, again.Refused, e)
		}
		if fmt.Sprintf("%+v", again.Events[0]) != fmt.Sprintf("%+v", e) {
			t.Fatalf("percent-encoded again, the event reads\n%+v\nnot\n%+v", again.Events[0], e)
		}

		if e.DataContentType != "" && e.Binary != nil {
			return // protobuf: structured mode carries it as data_base64, tested by FuzzDecodeStructured
		}
		// A binary-mode body is kept as sent; a structured member's value
		// is the value, without the whitespace around it.
		e.JSON = strings.Trim(e.JSON, " \t\r\n")
		st, refused := cloudevents.Decode(structuredHeader, encodeStructured(t, &e), l)
		if refused != nil || st.Refused != nil {
			t.Fatalf("in structured mode the event is refused: %v %v; was %+v", refused, st.Refused, e)
		}
		if fmt.Sprintf("%+v", st.Events[0]) != fmt.Sprintf("%+v", e) {
			t.Fatalf("in structured mode the event reads\n%+v\nnot\n%+v", st.Events[0], e)
		}
	})
}

// parseHeaders reads "name: value" lines up to a blank line into a header
// (names as sent, not canonicalized), and the rest as the body.
func parseHeaders(raw []byte) (http.Header, []byte) {
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	h := http.Header{}
	for _, line := range strings.Split(string(head), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		h[k] = append(h[k], strings.TrimLeft(v, " "))
	}
	return h, body
}

// percentEncode encodes s as the HTTP binding says: space, '"', '%' and
// everything outside printable ASCII, byte by byte of UTF-8.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c == '%' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// encodeBinary is e's binary-mode header, every value percent-encoded.
func encodeBinary(e *cloudevents.Event) http.Header {
	h := http.Header{}
	set := func(name, v string) { h["Ce-"+name] = []string{percentEncode(v)} }
	set("Specversion", e.SpecVersion)
	set("Id", e.ID)
	set("Source", e.Source)
	set("Type", e.Type)
	if e.HasTime {
		set("Time", e.Time.Format("2006-01-02T15:04:05.999999999Z07:00"))
	}
	if e.Subject != "" {
		set("Subject", e.Subject)
	}
	if e.DataSchema != "" {
		set("Dataschema", e.DataSchema)
	}
	for k, v := range e.Extensions {
		set(k, v)
	}
	if e.DataContentType != "" {
		h["Content-Type"] = []string{e.DataContentType}
	}
	return h
}

// encodeStructured is e in the JSON format, its extensions as strings
// (their canonical form) and its data as data or data_base64.
func encodeStructured(t *testing.T, e *cloudevents.Event) []byte {
	t.Helper()
	m := map[string]any{"specversion": e.SpecVersion, "id": e.ID, "source": e.Source, "type": e.Type}
	if e.HasTime {
		m["time"] = e.Time.Format("2006-01-02T15:04:05.999999999Z07:00")
	}
	for k, v := range map[string]string{"subject": e.Subject, "dataschema": e.DataSchema, "datacontenttype": e.DataContentType} {
		if v != "" {
			m[k] = v
		}
	}
	for k, v := range e.Extensions {
		m[k] = v
	}
	if e.Binary != nil {
		m["data_base64"] = e.Binary // encoding/json writes bytes as base64
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if e.JSON != "" { // as it is: json.Marshal would compact a RawMessage
		b = append(append(append(b[:len(b)-1], `,"data":`...), e.JSON...), '}')
	}
	return b
}
