package tracing_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A trace as Jaeger's query API answers it, in the span model's shape:
// the caller's span (not exported) → POST /v1/events → send → process →
// sink write (a child of process, linked to it as well).
const sampleTrace = `{"data":[{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spans":[
{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"b1","operationName":"sink write postgres","references":[{"refType":"CHILD_OF","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a4"},{"refType":"FOLLOWS_FROM","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a4"}],"startTime":1000900,"duration":3000,"tags":[{"key":"span.kind","type":"string","value":"client"}],"processID":"p2"},
{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a2","operationName":"POST /v1/events","references":[{"refType":"CHILD_OF","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"00f067aa0ba902b7"}],"startTime":1000000,"duration":2500,"tags":[{"key":"span.kind","type":"string","value":"server"}],"processID":"p1"},
{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a3","operationName":"send tracing-1.logs","references":[{"refType":"CHILD_OF","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a2"}],"startTime":1000200,"duration":2000,"tags":[{"key":"span.kind","type":"string","value":"producer"}],"processID":"p1"},
{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a4","operationName":"process tracing-1.logs","references":[{"refType":"CHILD_OF","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a3"}],"startTime":1000800,"duration":4000,"tags":[{"key":"span.kind","type":"string","value":"consumer"}],"processID":"p2"}],
"processes":{"p1":{"serviceName":"sluice-gateway"},"p2":{"serviceName":"sluice-consumer"}}}]}`

func TestCheckTraceAndText(t *testing.T) {
	var a jaegerAnswer
	if err := json.Unmarshal([]byte(sampleTrace), &a); err != nil {
		t.Fatal(err)
	}
	tr := a.Data[0]
	checkTrace(t, tr, "tracing-1.logs", "00f067aa0ba902b7")
	got := tr.text("tracing-1")
	for _, want := range []string{
		"trace 4bf92f3577b34da6a3ce929d0e0e4736, 4 spans",
		"POST /v1/events (parent: the caller's span 00f067aa0ba902b7)",
		"\n  send tracing-RUN.logs ",
		"\n    process tracing-RUN.logs ",
		"\n      sink write postgres (follows from: process tracing-RUN.logs) ",
		"+0.900 ms  3.000 ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the trace's text lacks %q:\n%s", want, got)
		}
	}

	// Jaeger keeps one reference to a span that is both the parent and a
	// link: a FOLLOWS_FROM. The checks and the tree take it as well.
	var b1 jaegerAnswer
	if err := json.Unmarshal([]byte(strings.Replace(sampleTrace,
		`{"refType":"CHILD_OF","traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spanID":"a4"},`, "", 1)), &b1); err != nil {
		t.Fatal(err)
	}
	checkTrace(t, b1.Data[0], "tracing-1.logs", "00f067aa0ba902b7")
	if got := b1.Data[0].text("tracing-1"); !strings.Contains(got, "\n      sink write postgres (follows from: process tracing-RUN.logs) ") {
		t.Errorf("a sink write that only follows from process is not under it:\n%s", got)
	}

	doc := filepath.Join(t.TempDir(), "tracing.md")
	if err := os.WriteFile(doc, []byte("# T\n\n"+docBegin+"\nold\n"+docEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, doc, got)
	b, _ := os.ReadFile(doc)
	if want := "# T\n\n" + docBegin + "\n```text\n" + got + "```\n" + docEnd + "\nafter\n"; string(b) != want {
		t.Errorf("writeDoc wrote\n%s\nwant\n%s", b, want)
	}
}
