package cloudevents_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway/cloudevents"
)

func TestLimitsValidate(t *testing.T) {
	if err := cloudevents.NewDefaultLimits().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		field string
		set   func(*cloudevents.Limits)
	}{
		{"MaxEvents", func(l *cloudevents.Limits) { l.MaxEvents = 0 }},
		{"MaxBodyBytes", func(l *cloudevents.Limits) { l.MaxBodyBytes = -1 }},
		{"MaxEventBytes", func(l *cloudevents.Limits) { l.MaxEventBytes = 0 }},
		{"MaxAttributes", func(l *cloudevents.Limits) { l.MaxAttributes = -1 }},
		{"MaxContextBytes", func(l *cloudevents.Limits) { l.MaxContextBytes = 100 }},
	} {
		l := cloudevents.NewDefaultLimits()
		tc.set(&l)
		if err := l.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v, want an error naming it", tc.field, err)
		}
	}
}

// TestDecodeCopies: what Decode returns shares no memory with the body,
// which the caller may reuse (a header's strings cannot change).
func TestDecodeCopies(t *testing.T) {
	l := cloudevents.NewDefaultLimits()
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
	}{
		{"structured", structuredHeader, structured(`,"subject":"s","ext":"v","data":{"a":"b"}`)},
		{"data_base64", structuredHeader, structured(`,"data_base64":"CgExEAI="`)},
		{"batch", batchHeader(), "[" + structured(`,"data":{"a":"b"}`) + "]"},
		{"binary protobuf", binaryHeader("Content-Type", "application/protobuf", "Ce-Ext", "v"), "\x0a\x01x"},
		{"binary JSON", binaryHeader("Ce-Ext", "v"), `{"a":"b"}`},
	} {
		body := []byte(tc.body)
		dec, refused := cloudevents.Decode(tc.header, body, l)
		if refused != nil || dec.Refused != nil {
			t.Fatalf("%s: refused %v %v", tc.name, refused, dec.Refused)
		}
		before := dec.Events[0]
		want := []string{before.ID, before.Source, before.Type, before.Subject, before.JSON, string(before.Binary), before.Extensions["ext"]}
		for i := range body {
			body[i] = 'X'
		}
		after := dec.Events[0]
		got := []string{after.ID, after.Source, after.Type, after.Subject, after.JSON, string(after.Binary), after.Extensions["ext"]}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: %q became %q when the request was overwritten", tc.name, want[i], got[i])
			}
		}
	}
}

// TestMapping: the partition key, attributes and data forms an event
// maps to.
func TestMapping(t *testing.T) {
	l := cloudevents.NewDefaultLimits()
	for _, tc := range []struct {
		name, body string
		key        string
		attrs      map[string]string
		json       string
		binary     string
		hasData    bool
	}{
		{name: "partitionkey wins over subject", body: structured(`,"subject":"s","partitionkey":"k","data":{}`), key: "k", json: "{}", hasData: true},
		{name: "subject is the key", body: structured(`,"subject":"s","data":{}`), key: "s", json: "{}", hasData: true},
		{name: "no key", body: structured(`,"data":{}`), json: "{}", hasData: true},
		{name: "canonical forms", body: structured(`,"i":-0,"n":-2147483648,"t":true,"f":false,"s":"x","partitionkey":7`),
			key: "7", attrs: map[string]string{"i": "0", "n": "-2147483648", "t": "true", "f": "false", "s": "x"}},
		{name: "null is unset", body: structured(`,"subject":null,"time":null,"ext":null,"data_base64":null`)},
		{name: "JSON data_base64", body: structured(`,"datacontenttype":"application/cloudevents+json","data_base64":"eyJhIjoxfQ=="`), json: `{"a":1}`, hasData: true},
		{name: "text/json", body: structured(`,"datacontenttype":"Text/JSON; charset=UTF-8","data":[1]`), json: `[1]`, hasData: true},
		{name: "x-protobuf bytes", body: structured(`,"datacontenttype":"application/x-protobuf","data_base64":"CAE="`), binary: "\x08\x01", hasData: true},
		{name: "empty data_base64 is an empty message", body: structured(`,"datacontenttype":"application/protobuf","data_base64":""`), binary: "", hasData: true},
		{name: "data null is JSON null", body: structured(`,"data":null`), json: "null", hasData: true},
		{name: "a type without data", body: structured(`,"datacontenttype":"text/plain"`)},
	} {
		dec, refused := cloudevents.Decode(structuredHeader, []byte(tc.body), l)
		if refused != nil || dec.Refused != nil {
			t.Fatalf("%s: refused %v %v", tc.name, refused, dec.Refused)
		}
		e := &dec.Events[0]
		if e.PartitionKey != tc.key || e.JSON != tc.json || string(e.Binary) != tc.binary || e.HasData() != tc.hasData ||
			e.Binary == nil && tc.binary != "" {
			t.Errorf("%s: key %q json %q binary %q data %v", tc.name, e.PartitionKey, e.JSON, e.Binary, e.HasData())
		}
		attrs := e.Attributes()
		if len(attrs) != len(tc.attrs) || tc.attrs == nil && attrs != nil {
			t.Errorf("%s: attributes %v, want %v", tc.name, attrs, tc.attrs)
		}
		for k, v := range tc.attrs {
			if attrs[k] != v {
				t.Errorf("%s: attribute %s %q, want %q", tc.name, k, attrs[k], v)
			}
		}
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[cloudevents.Mode]string{cloudevents.Binary: "binary", cloudevents.Structured: "structured", cloudevents.Batch: "batch", 0: "Mode(0)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", m, m.String(), want)
		}
	}
}
