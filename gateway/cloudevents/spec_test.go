package cloudevents_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/cloudevents"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// readSpec reads testdata/spec/name.
func readSpec(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spec", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readBinaryExample reads a binary-mode request written as the spec
// writes them: header lines, a blank line, the body (its file's last line
// break not part of it).
func readBinaryExample(t *testing.T, name string) (http.Header, []byte) {
	t.Helper()
	raw := readSpec(t, name)
	head, body, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		t.Fatalf("%s: no blank line after the headers", name)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(head, "\n\n"...))))
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return http.Header(h), bytes.TrimSuffix(body, []byte("\n"))
}

var structuredHeader = http.Header{"Content-Type": {"application/cloudevents+json; charset=UTF-8"}}

func batchHeader() http.Header {
	return http.Header{"Content-Type": {"application/cloudevents-batch+json"}}
}

// compactJSON is s without insignificant whitespace.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b.String()
}

// TestSpecExamples decodes the JSON format's examples, and the HTTP
// binary-mode re-encodings the spec gives for them: each form decodes to
// the same event, or is refused for the same reason.
func TestSpecExamples(t *testing.T) {
	l := cloudevents.NewDefaultLimits()
	common := map[string]string{"comexampleextension1": "value", "comexampleothervalue": "5"}
	for _, tc := range []struct {
		name string
		// refusedField is the field an example is refused for, with
		// MALFORMED; "" when it is accepted.
		refusedField string
		json, binary string // the data, when accepted
		bin          []byte
		ext          map[string]string
	}{
		// Thrift bytes: no contract reads them.
		{name: "json-binary-data", refusedField: "datacontenttype"},
		{name: "json-xml-data", refusedField: "datacontenttype"},
		{name: "json-object-data", json: `{"appinfoA":"abc","appinfoB":123,"appinfoC":true}`, ext: common},
		// Decoded; the contract check refuses a payload that is not an object.
		{name: "json-number-data", json: `1.5`, ext: common},
		{name: "json-string-data", json: `"I'm just a string"`, ext: common},
		// Bytes without a type: the contract's protobuf binary.
		{name: "json-base64-no-type", bin: []byte(`{ "xyz": 123 }`)},
	} {
		dec, refused := cloudevents.Decode(structuredHeader, readSpec(t, tc.name+".json"), l)
		if refused != nil || len(dec.Events) != 1 {
			t.Fatalf("%s: refused %v, %d events", tc.name, refused, len(dec.Events))
		}
		forms := []cloudevents.Decoded{dec}
		if h, body, err := binaryExample(t, tc.name); err == nil {
			dec, refused := cloudevents.Decode(h, body, l)
			if refused != nil || dec.Mode != cloudevents.Binary {
				t.Fatalf("%s (binary): refused %v, mode %v", tc.name, refused, dec.Mode)
			}
			forms = append(forms, dec)
		}
		for i, dec := range forms {
			e := dec.Events[0]
			if tc.refusedField != "" {
				if dec.Refused == nil || dec.Refused[0].Reason != ingestv1.Reason_MALFORMED || dec.Refused[0].Field != tc.refusedField {
					t.Errorf("%s form %d: refused %v, want MALFORMED on %s", tc.name, i, dec.Refused, tc.refusedField)
				}
				continue
			}
			if dec.Refused != nil {
				t.Errorf("%s form %d: refused %v", tc.name, i, dec.Refused[0])
				continue
			}
			if e.ID == "" || e.Source != "/mycontext" || e.Type != "com.example.someevent" || e.Subject != "" {
				t.Errorf("%s form %d: attributes %+v", tc.name, i, e)
			}
			if len(e.Extensions) != len(tc.ext) {
				t.Errorf("%s form %d: extensions %v, want %v", tc.name, i, e.Extensions, tc.ext)
			}
			for k, v := range tc.ext {
				if e.Extensions[k] != v {
					t.Errorf("%s form %d: extension %s %q, want %q", tc.name, i, k, e.Extensions[k], v)
				}
			}
			switch {
			case tc.bin != nil:
				if !bytes.Equal(e.Binary, tc.bin) || e.JSON != "" {
					t.Errorf("%s form %d: binary %q json %q, want binary %q", tc.name, i, e.Binary, e.JSON, tc.bin)
				}
			case e.Binary != nil || compactJSON(t, e.JSON) != tc.json:
				t.Errorf("%s form %d: json %q binary %q, want json %s", tc.name, i, e.JSON, e.Binary, tc.json)
			}
		}
	}

	dec, refused := cloudevents.Decode(batchHeader(), readSpec(t, "batch.json"), l)
	if refused != nil || dec.Mode != cloudevents.Batch || len(dec.Events) != 2 || dec.Refused == nil {
		t.Fatalf("batch: %v %+v", refused, dec)
	}
	if r := dec.Refused[0]; r == nil || r.Field != "datacontenttype" || dec.Events[0].ID != "B234-1234-1234" {
		t.Errorf("batch event 0: refused %v, id %q", r, dec.Events[0].ID)
	}
	if r := dec.Refused[1]; r != nil || dec.Events[1].ID != "C234-1234-1234" || dec.Events[1].Source != "/mycontext/9" ||
		compactJSON(t, dec.Events[1].JSON) != `{"appinfoA":"abc","appinfoB":123,"appinfoC":true}` {
		t.Errorf("batch event 1: refused %v, %+v", r, dec.Events[1])
	}
	dec, refused = cloudevents.Decode(batchHeader(), readSpec(t, "batch-empty.json"), l)
	if refused != nil || dec.Mode != cloudevents.Batch || len(dec.Events) != 0 {
		t.Errorf("empty batch: %v %+v", refused, dec)
	}

	h, body := readBinaryExample(t, "http-binary.txt")
	dec, refused = cloudevents.Decode(h, body, l)
	if refused != nil || dec.Refused != nil {
		t.Fatalf("http binary example: %v %v", refused, dec.Refused)
	}
	e := dec.Events[0]
	if e.ID != "1234-1234-1234" || e.Source != "/mycontext/subcontext" || !e.HasTime || e.Time.Unix() != 1522900584 ||
		e.DataContentType != "application/json; charset=utf-8" || compactJSON(t, e.JSON) != `{"appinfoA":"abc"}` {
		t.Errorf("http binary example: %+v", e)
	}
}

// binaryExample reads the binary-mode form of an example, when the spec
// gives one.
func binaryExample(t *testing.T, name string) (http.Header, []byte, error) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("testdata", "spec", name+".binary")); err != nil {
		return nil, nil, err
	}
	h, body := readBinaryExample(t, name+".binary")
	return h, body, nil
}

// TestPercentDecoding: binary-mode header values are unquoted and
// percent-decoded as the HTTP binding says, and refused where they cannot
// be.
func TestPercentDecoding(t *testing.T) {
	for _, tc := range []struct {
		sent, want string
		problem    string // part of the refusal; "" when accepted
	}{
		{sent: "Euro%20%E2%82%AC%20%F0%9F%98%80", want: "Euro € 😀"}, // the spec's example
		{sent: "%41%62c", want: "Abc"},                              // encoded needlessly: accepted
		{sent: "%e2%82%ac", want: "€"},                              // lower-case hex
		{sent: `"quoted \"value\" with space"`, want: `quoted "value" with space`},
		{sent: `"100%25"`, want: "100%"},
		{sent: "plain-ünïcode", want: "plain-ünïcode"}, // raw UTF-8, as SDKs that do not encode send it
		{sent: "%C0%A0", problem: "not valid UTF-8"},   // the spec's overlong example
		{sent: "%zz", problem: "invalid percent-encoding"},
		{sent: "100%", problem: "invalid percent-encoding"},
		{sent: "%4", problem: "invalid percent-encoding"},
		{sent: "%ED%A0%80", problem: "not valid UTF-8"}, // a surrogate
		{sent: "%0A", problem: "control character"},
		{sent: `"unterminated`, problem: "closing quote"},
		{sent: `"a"b`, problem: "after a quoted string"},
		{sent: "\xff", problem: "not valid UTF-8"},
	} {
		h := http.Header{
			"Ce-Specversion": {"1.0"}, "Ce-Id": {"1"}, "Ce-Source": {"/s"}, "Ce-Type": {"t"},
			"Ce-Note":      {tc.sent},
			"Content-Type": {"application/json"},
		}
		dec, refused := cloudevents.Decode(h, []byte(`{}`), cloudevents.NewDefaultLimits())
		if refused != nil {
			t.Fatalf("%q: %v", tc.sent, refused)
		}
		if tc.problem == "" {
			if dec.Refused != nil || dec.Events[0].Extensions["note"] != tc.want {
				t.Errorf("%q: decoded %q, refused %v; want %q", tc.sent, dec.Events[0].Extensions["note"], dec.Refused, tc.want)
			}
			continue
		}
		if dec.Refused == nil || dec.Refused[0].Reason != ingestv1.Reason_MALFORMED || dec.Refused[0].Field != "note" ||
			!strings.Contains(dec.Refused[0].Msg, tc.problem) {
			t.Errorf("%q: refused %v, want MALFORMED on note with %q", tc.sent, dec.Refused, tc.problem)
		}
	}
}
