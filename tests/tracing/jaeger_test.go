package tracing_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

var writeTraceDoc = flag.Bool("write-trace-doc", false, "write the trace fetched from Jaeger into docs/tracing.md, between its trace markers")

// The trace as Jaeger's query API (GET /api/traces/{id}) answers it: times
// in microseconds, the parent as a CHILD_OF reference, links as
// FOLLOWS_FROM ones.
type jaegerAnswer struct {
	Data []trace `json:"data"`
}

type trace struct {
	TraceID   string `json:"traceID"`
	Spans     []span `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

// parent is the span's CHILD_OF reference, "" for a root.
func (sp span) parent() string {
	for _, r := range sp.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// links are the spans of the span's FOLLOWS_FROM references.
func (sp span) links() []string {
	var out []string
	for _, r := range sp.References {
		if r.RefType == "FOLLOWS_FROM" {
			out = append(out, r.SpanID)
		}
	}
	return out
}

func (sp span) tag(key string) string {
	for _, t := range sp.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (sp span) end() int64 { return sp.StartTime + sp.Duration }

// above is the span tr shows sp under: its parent when that is in the
// trace, else the first span of the trace it follows from (Jaeger keeps
// one reference to a span that is both the parent and a link, as a
// FOLLOWS_FROM); nil for a root. via says which.
func (tr trace) above(sp span) (p *span, via string) {
	if p := tr.byID(sp.parent()); p != nil {
		return p, "CHILD_OF"
	}
	for _, l := range sp.links() {
		if p := tr.byID(l); p != nil {
			return p, "FOLLOWS_FROM"
		}
	}
	return nil, ""
}

// named is the first span whose name has prefix, nil when none has.
func (tr trace) named(prefix string) *span {
	for i := range tr.Spans {
		if strings.HasPrefix(tr.Spans[i].OperationName, prefix) {
			return &tr.Spans[i]
		}
	}
	return nil
}

func (tr trace) byID(id string) *span {
	for i := range tr.Spans {
		if tr.Spans[i].SpanID == id {
			return &tr.Spans[i]
		}
	}
	return nil
}

// fetchTrace polls Jaeger, at most 30 s, until the trace holds a span
// named with each of prefixes, and returns what it holds then (the test's
// checks say what is missing).
func (s *system) fetchTrace(traceID string, prefixes []string) trace {
	s.t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	var tr trace
	var last string
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + s.queryHTTP + "/api/traces/" + traceID)
		if err != nil {
			last = err.Error()
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var a jaegerAnswer
			switch {
			case resp.StatusCode != http.StatusOK:
				last = resp.Status + " " + string(body)
			case json.Unmarshal(body, &a) != nil || len(a.Data) == 0:
				last = "no trace in " + string(body)
			default:
				tr = a.Data[0]
				if !slices.ContainsFunc(prefixes, func(p string) bool { return tr.named(p) == nil }) {
					return tr
				}
				last = fmt.Sprintf("%d spans", len(tr.Spans))
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Logf("Jaeger's trace %s after 30 s: %s", traceID, last)
	return tr
}

// checkTrace holds the trace to the span model: the gateway's server span
// under the caller's span, send under it, process under send, sink write
// under (or linked to) process; no child starting before its parent; the
// server span ending after send.
func checkTrace(t *testing.T, tr trace, topic, callerSpan string) {
	t.Helper()
	server, send := tr.named("POST /v1/events"), tr.named("send "+topic)
	process, write := tr.named("process "+topic), tr.named("sink write ")
	for name, sp := range map[string]*span{"POST /v1/events": server, "send " + topic: send, "process " + topic: process, "sink write {sink}": write} {
		if sp == nil {
			t.Errorf("Jaeger's trace %s has no span %q", tr.TraceID, name)
		}
	}
	for _, sp := range tr.Spans {
		if sp.TraceID != tr.TraceID {
			t.Errorf("span %s %q is in trace %s, not %s", sp.SpanID, sp.OperationName, sp.TraceID, tr.TraceID)
		}
		if p, via := tr.above(sp); p != nil && sp.StartTime < p.StartTime {
			t.Errorf("%q starts %d µs before %q, which it references (%s)", sp.OperationName, p.StartTime-sp.StartTime, p.OperationName, via)
		}
	}
	if t.Failed() {
		return
	}
	kinds := map[*span]string{server: "server", send: "producer", process: "consumer", write: "client"}
	for sp, kind := range kinds {
		if got := sp.tag("span.kind"); got != kind {
			t.Errorf("%q has span.kind %q, want %s", sp.OperationName, got, kind)
		}
	}
	if got := server.parent(); got != callerSpan {
		t.Errorf("the server span's parent is %q, want the caller's span %s", got, callerSpan)
	}
	if got := send.parent(); got != server.SpanID {
		t.Errorf("%q's parent is %q, want the server span %s", send.OperationName, got, server.SpanID)
	}
	if got := process.parent(); got != send.SpanID {
		t.Errorf("%q's parent is %q, want %q %s", process.OperationName, got, send.OperationName, send.SpanID)
	}
	if write.parent() != process.SpanID && !slices.Contains(write.links(), process.SpanID) {
		t.Errorf("%q is neither a child of %q (%s) nor linked to it: parent %q, links %q",
			write.OperationName, process.OperationName, process.SpanID, write.parent(), write.links())
	}
	if server.end() < send.end() {
		t.Errorf("the server span ends %d µs before %q", send.end()-server.end(), send.OperationName)
	}
}

// text is the trace as an indented tree, each span with its service,
// kind, start (from the trace's first span) and duration; run, the test
// run's prefix in topic names, is written as "tracing-RUN".
func (tr trace) text(run string) string {
	if len(tr.Spans) == 0 {
		return "(no spans)\n"
	}
	spans := slices.Clone(tr.Spans)
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.StartTime, b.StartTime) })
	t0 := spans[0].StartTime
	children := map[string][]span{}
	var roots []span
	for _, sp := range spans {
		if p, _ := tr.above(sp); p == nil {
			roots = append(roots, sp)
		} else {
			children[p.SpanID] = append(children[p.SpanID], sp)
		}
	}
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "span\tservice\tkind\tstart\tduration\n")
	ms := func(us int64) string { return fmt.Sprintf("%.3f ms", float64(us)/1000) }
	var walk func(sp span, depth int)
	walk = func(sp span, depth int) {
		name := strings.ReplaceAll(sp.OperationName, run, "tracing-RUN")
		var notes []string
		if depth == 0 && sp.parent() != "" {
			notes = append(notes, "parent: the caller's span "+sp.parent())
		}
		for _, l := range sp.links() {
			if ln := tr.byID(l); ln != nil {
				notes = append(notes, "follows from: "+strings.ReplaceAll(ln.OperationName, run, "tracing-RUN"))
			}
		}
		if len(notes) > 0 {
			name += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\t+%s\t%s\n", strings.Repeat("  ", depth), name,
			tr.Processes[sp.ProcessID].ServiceName, cmp.Or(sp.tag("span.kind"), "internal"), ms(sp.StartTime-t0), ms(sp.Duration))
		for _, c := range children[sp.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	w.Flush()
	return fmt.Sprintf("trace %s, %d spans\n\n%s", tr.TraceID, len(tr.Spans), b.String())
}

const (
	docBegin = "<!-- trace:begin (written by go test ./tests/tracing -args -write-trace-doc) -->"
	docEnd   = "<!-- trace:end -->"
)

// writeDoc puts text, as a text block, between doc's trace markers.
func writeDoc(t *testing.T, doc, text string) {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q markers", doc, docBegin, docEnd)
	}
	s = s[:i+len(docBegin)] + "\n```text\n" + text + "```\n" + s[j:]
	if err := os.WriteFile(doc, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the trace into %s", doc)
}
