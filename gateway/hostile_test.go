package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// answer is what a caller learns from one request, whichever transport:
// a whole-request refusal, or a result per event.
type answer struct {
	whole     bool
	reason    string // the whole refusal's reason
	retryable bool
	status    int        // REST
	code      codes.Code // gRPC
	fields    []string   // the whole refusal's violations
	allow     string     // REST: the Allow header
	results   []*ingestv1.EventResult
}

// want is one row's expectation. A whole refusal names its reason and,
// when field is set, its first violation's field; a per-event one names
// the refused event's index, reason and first field, and what the other
// events got.
type want struct {
	whole  bool
	reason ingestv1.Reason
	field  string
	index  int
	others ingestv1.Outcome // 0: the request has no other events
	status int              // REST status; 0: the reason's
	code   codes.Code       // gRPC code of a whole refusal; 0: the reason's
}

func restAnswer(t *testing.T, resp *http.Response, body []byte) answer {
	t.Helper()
	a := answer{status: resp.StatusCode, allow: resp.Header.Get("Allow")}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d with content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var pr ingestv1.PublishResponse
	if protojson.Unmarshal(body, &pr) == nil && bytes.Contains(body, []byte(`"results"`)) {
		a.results = pr.GetResults()
		return a
	}
	var eb ingestv1.ErrorBody
	if err := protojson.Unmarshal(body, &eb); err != nil || eb.GetReason() == ingestv1.Reason_REASON_UNSPECIFIED {
		t.Fatalf("status %d with an untyped body %s", resp.StatusCode, body)
	}
	a.whole, a.reason, a.retryable = true, eb.GetReason().String(), eb.GetRetryable()
	for _, v := range eb.GetViolations() {
		a.fields = append(a.fields, v.GetField())
	}
	return a
}

func grpcAnswer(t *testing.T, raw []byte, err error) answer {
	t.Helper()
	if err == nil {
		var pr ingestv1.PublishResponse
		if err := proto.Unmarshal(raw, &pr); err != nil {
			t.Fatal(err)
		}
		return answer{results: pr.GetResults()}
	}
	st := status.Convert(err)
	a := answer{whole: true, code: st.Code()}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			a.reason, a.retryable = d.GetReason(), d.GetMetadata()["retryable"] == "true"
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				a.fields = append(a.fields, v.GetField())
			}
		}
	}
	if a.reason == "" {
		t.Fatalf("untyped gRPC refusal (no ErrorInfo): %v", err)
	}
	return a
}

func (w want) check(t *testing.T, a answer, rest bool) {
	t.Helper()
	if w.whole {
		if !a.whole {
			t.Fatalf("got results %v, want a whole-request %s", a.results, w.reason)
		}
		if a.reason != w.reason.String() || a.retryable {
			t.Fatalf("got %s (retryable %v), want %s, not retryable", a.reason, a.retryable, w.reason)
		}
		if w.field != "" && (len(a.fields) == 0 || a.fields[0] != w.field) {
			t.Fatalf("violations %v, want field %q first", a.fields, w.field)
		}
		code, status := gateway.ReasonCode(w.reason), gateway.ReasonHTTPStatus(w.reason)
		if w.code != 0 {
			code = w.code
		}
		if w.status != 0 {
			status = w.status
		}
		if rest && a.status != status {
			t.Fatalf("status %d, want %d", a.status, status)
		}
		if !rest && a.code != code {
			t.Fatalf("code %v, want %v", a.code, code)
		}
		return
	}
	if a.whole {
		t.Fatalf("got a whole-request %s %v, want a per-event %s at %d", a.reason, a.fields, w.reason, w.index)
	}
	if w.index >= len(a.results) {
		t.Fatalf("%d results, want event %d refused", len(a.results), w.index)
	}
	for i, r := range a.results {
		if int(r.GetIndex()) != i {
			t.Fatalf("result %d has index %d", i, r.GetIndex())
		}
		if i != w.index {
			if r.GetOutcome() != w.others {
				t.Fatalf("event %d: %v, want %v", i, r, w.others)
			}
			continue
		}
		rej := r.GetRejection()
		if r.GetOutcome() != ingestv1.Outcome_REJECTED || rej.GetReason() != w.reason || rej.GetRetryable() || rej.GetMessage() == "" {
			t.Fatalf("event %d: %v, want %s, not retryable, with a message", i, r, w.reason)
		}
		if w.field != "" && (len(rej.GetViolations()) == 0 || rej.GetViolations()[0].GetField() != w.field) {
			t.Fatalf("event %d: violations %v, want field %q first", i, rej.GetViolations(), w.field)
		}
	}
	if rest && w.status != 0 && a.status != w.status {
		t.Fatalf("status %d, want %d", a.status, w.status)
	}
}

// TestHostileREST: one row per hostile REST input; each gets its typed
// answer with the reason, status, retryable flag and field path it should.
func TestHostileREST(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	at := h.clock.Now().Format(time.RFC3339)
	good := func(id string) string {
		return `{"id":"` + id + `","type":"` + typeLog + `","occurred_at":"` + at + `","payload":` + string(examples.LogLineJSON) + `}`
	}
	withField := func(id, extra string) string {
		return `{"id":"` + id + `","type":"` + typeLog + `","occurred_at":"` + at + `","payload":` + string(examples.LogLineJSON) + `,` + extra + `}`
	}
	events := func(evs ...string) string { return `{"events":[` + strings.Join(evs, ",") + `]}` }
	var eleven []string
	for i := range h.cfg.Limits.MaxEventsPerRequest + 1 {
		eleven = append(eleven, good(fmt.Sprintf("many-%d", i)))
	}
	type row struct {
		name    string
		method  string // default POST
		path    string // default /v1/events
		headers map[string]string
		body    string
		want    want
		allow   string
	}
	perEvent := func(reason ingestv1.Reason, field string, index int, others ingestv1.Outcome) want {
		return want{reason: reason, field: field, index: index, others: others}
	}
	for _, c := range []row{
		{name: "events twice", body: `{"events":[` + good("dup-a") + `],"events":[]}`,
			want: want{whole: true, reason: ingestv1.Reason_MALFORMED, field: "events"}},
		{name: "id twice in one event", body: events(`{"id":"a","id":"b","type":"` + typeLog + `","occurred_at":"` + at + `","payload":{}}`),
			want: perEvent(ingestv1.Reason_MALFORMED, "id", 0, 0)},
		{name: "misspelt event field", body: events(`{"id":"typo","typ":"x"}`),
			want: perEvent(ingestv1.Reason_MALFORMED, "typ", 0, 0)},
		{name: "EVENTS", body: `{"EVENTS":[` + good("case-a") + `]}`,
			want: want{whole: true, reason: ingestv1.Reason_MALFORMED, field: "EVENTS"}},
		{name: "ID", body: events(strings.Replace(good("case-b"), `"id"`, `"ID"`, 1)),
			want: perEvent(ingestv1.Reason_MALFORMED, "ID", 0, 0)},
		{name: "Payload", body: events(strings.Replace(good("case-c"), `"payload"`, `"Payload"`, 1)),
			want: perEvent(ingestv1.Reason_MALFORMED, "Payload", 0, 0)},
		{name: "body null", body: `null`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{name: "lone surrogate in partition_key", body: events(withField("sur-a", `"partition_key":"\ud800"`)),
			want: perEvent(ingestv1.Reason_MALFORMED, "partition_key", 0, 0)},
		{name: "lone surrogate in an attribute", body: events(good("sur-ok"), withField("sur-b", `"attributes":{"k":"x\udc00"}`)),
			want: perEvent(ingestv1.Reason_MALFORMED, `attributes["k"]`, 1, ingestv1.Outcome_ACCEPTED)},
		{name: "payload a number, the next event judged", body: events(`{"id":"num","type":"`+typeLog+`","occurred_at":"`+at+`","payload":5}`, good("after-num")),
			want: perEvent(ingestv1.Reason_MALFORMED, "payload", 0, ingestv1.Outcome_ACCEPTED)},
		{name: "payload an array", body: events(good("before-arr"), `{"id":"arr","type":"`+typeLog+`","occurred_at":"`+at+`","payload":[1]}`),
			want: perEvent(ingestv1.Reason_MALFORMED, "payload", 1, ingestv1.Outcome_ACCEPTED)},
		{name: "bad occurred_at", body: events(`{"id":"t","type":"` + typeLog + `","occurred_at":"yesterday","payload":{}}`),
			want: perEvent(ingestv1.Reason_MALFORMED, "occurred_at", 0, 0)},
		{name: "payload too deep", body: events(`{"id":"deep","type":"` + typeLog + `","occurred_at":"` + at + `","payload":` + strings.Repeat(`{"a":`, 12) + "1" + strings.Repeat("}", 12) + `}`),
			want: perEvent(ingestv1.Reason_MALFORMED, "payload", 0, 0)},
		{name: "events over the limit", body: events(eleven...),
			want: want{whole: true, reason: ingestv1.Reason_BATCH_TOO_LARGE}},
		{name: "trailing data", body: `{"events":[]} {}`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{name: "invalid UTF-8", body: "{\"events\":[{\"id\":\"\xff\"}]}", want: want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{name: "Grpc-Timeout garbage", headers: map[string]string{"Grpc-Timeout": "garbage"}, body: events(good("gt")),
			want: want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{name: "method override with a form body", headers: map[string]string{"X-HTTP-Method-Override": "GET", "Content-Type": "application/x-www-form-urlencoded"},
			body: `a=b`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{name: "method override POST and curl's form type: judged", headers: map[string]string{"X-HTTP-Method-Override": "POST", "Content-Type": "application/x-www-form-urlencoded"},
			body: events(good("curl")), want: want{index: -1, others: ingestv1.Outcome_ACCEPTED}},
		{name: "POST /nope", path: "/nope", body: `{}`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED, status: http.StatusNotFound}},
		{name: "POST /v1%2Fevents", path: "/v1%2Fevents", body: `{}`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED, status: http.StatusNotFound}},
		{name: "POST /v1/nope", path: "/v1/nope", body: `{}`, want: want{whole: true, reason: ingestv1.Reason_MALFORMED, status: http.StatusNotFound}},
		{name: "TRACE /v1/events", method: "TRACE", want: want{whole: true, reason: ingestv1.Reason_MALFORMED, status: http.StatusMethodNotAllowed}, allow: "POST"},
		{name: "GET /v1/events", method: http.MethodGet, want: want{whole: true, reason: ingestv1.Reason_MALFORMED, status: http.StatusMethodNotAllowed}, allow: "POST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			method, path := c.method, c.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/events"
			}
			req, err := http.NewRequest(method, "http://"+h.srv.HTTPAddr()+path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", keyAll)
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			c.want.check(t, restAnswer(t, resp, body), true)
			if c.allow != "" && resp.Header.Get("Allow") != c.allow {
				t.Errorf("Allow %q, want %q", resp.Header.Get("Allow"), c.allow)
			}
		})
	}
}

// wire builds protobuf wire bytes from fields appended in turn.
type wire []byte

func (w wire) bytes(num protowire.Number, b []byte) wire {
	w = protowire.AppendTag(w, num, protowire.BytesType)
	return protowire.AppendBytes(w, b)
}

func (w wire) varint(num protowire.Number, v uint64) wire {
	w = protowire.AppendTag(w, num, protowire.VarintType)
	return protowire.AppendVarint(w, v)
}

// TestHostileGRPC: one row per hostile gRPC message, sent as raw bytes;
// each gets its typed answer.
func TestHostileGRPC(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	at := h.clock.Now()
	event := func(id string) wire {
		b, err := proto.Marshal(ev{ID: id, Type: typeLog, At: at, JSON: examples.LogLineJSON}.proto())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// An event whose occurred_at has nanos -1: field 3 replaced.
	negNanos := wire(nil).bytes(1, []byte("nanos")).bytes(2, []byte(typeLog)).
		bytes(3, wire(nil).varint(1, uint64(at.Unix())).varint(2, uint64(0xFFFFFFFFFFFFFFFF))).
		bytes(6, examples.LogLineJSON)
	var tooMany wire
	for i := range h.cfg.Limits.MaxEventsPerRequest + 1 {
		tooMany = tooMany.bytes(1, event(fmt.Sprintf("many-%d", i)))
	}
	overLimit := wire(nil).bytes(1, event("big")).bytes(1, wire(nil).bytes(1, []byte("pad")).bytes(6, bytes.Repeat([]byte(" "), h.cfg.Limits.MaxRequestBytes)))
	overTransport := wire(nil).bytes(1, wire(nil).bytes(6, bytes.Repeat([]byte(" "), 2*h.cfg.Limits.MaxRequestBytes)))
	for _, c := range []struct {
		name string
		key  string
		msg  []byte
		want want
	}{
		{"nanos -1", keyAll, wire(nil).bytes(1, event("n-ok")).bytes(1, negNanos),
			want{reason: ingestv1.Reason_MALFORMED, field: "occurred_at", index: 1, others: ingestv1.Outcome_ACCEPTED}},
		{"events as a varint", keyAll, wire(nil).varint(1, 1),
			want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{"unknown top-level field", keyAll, wire(nil).bytes(1, event("u-1")).varint(9, 1),
			want{whole: true, reason: ingestv1.Reason_MALFORMED}},
		{"unknown event field", keyAll, wire(nil).bytes(1, append(event("u-2"), wire(nil).varint(15, 1)...)),
			want{reason: ingestv1.Reason_MALFORMED, index: 0}},
		{"mistyped event field", keyAll, wire(nil).bytes(1, wire(nil).varint(1, 7)),
			want{reason: ingestv1.Reason_MALFORMED, index: 0}},
		{"invalid UTF-8 in an id", keyAll, wire(nil).bytes(1, wire(nil).bytes(1, []byte{0xff}).bytes(2, []byte(typeLog))),
			want{reason: ingestv1.Reason_MALFORMED, field: "id", index: 0}},
		{"events over the limit", keyAll, tooMany,
			want{whole: true, reason: ingestv1.Reason_BATCH_TOO_LARGE}},
		{"bytes over the limit", keyAll, overLimit,
			want{whole: true, reason: ingestv1.Reason_BATCH_TOO_LARGE}},
		{"undecodable, no key", "", []byte{0xff, 0xff, 0xff},
			want{whole: true, reason: ingestv1.Reason_UNAUTHENTICATED}},
		{"undecodable, wrong key", "nope", []byte{0xff, 0xff, 0xff},
			want{whole: true, reason: ingestv1.Reason_UNAUTHENTICATED}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(withKey(context.Background(), c.key), 15*time.Second)
			defer cancel()
			var out []byte
			err := h.conn.Invoke(ctx, ingestv1.IngestService_Publish_FullMethodName, []byte(c.msg), &out,
				grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(8*h.cfg.Limits.MaxRequestBytes))
			c.want.check(t, grpcAnswer(t, out, err), false)
		})
	}
	// An empty message is a request with no events: no buffer to decode.
	ctx, cancel := context.WithTimeout(withKey(context.Background(), keyAll), 15*time.Second)
	defer cancel()
	var out []byte
	err := h.conn.Invoke(ctx, ingestv1.IngestService_Publish_FullMethodName, []byte{}, &out, grpc.ForceCodec(rawCodec{}))
	var empty ingestv1.PublishResponse
	if err != nil || proto.Unmarshal(out, &empty) != nil || len(empty.GetResults()) != 0 {
		t.Fatalf("an empty request: %v, %x; want no results", err, out)
	}
	// Past twice the limit the transport refuses the message from its
	// length prefix, unread, and answers for itself: RESOURCE_EXHAUSTED
	// without ErrorInfo, as the README's table says.
	err = h.conn.Invoke(ctx, ingestv1.IngestService_Publish_FullMethodName, []byte(overTransport), &out,
		grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(8*h.cfg.Limits.MaxRequestBytes))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a message over twice the limit: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// TestRESTAndGRPCAgree: the same bad event, sent through REST and through
// gRPC (with the same JSON payload), gets the same reason and the same
// field paths.
func TestRESTAndGRPCAgree(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	at := h.clock.Now()
	labels := func(n int, key string) []byte {
		var b strings.Builder
		b.WriteString(`{"service":"api","severity":"SEVERITY_INFO","message":"m","timestamp":"` + at.Format(time.RFC3339) + `","host":"example.com","labels":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%s%d":"v"`, key, i)
		}
		b.WriteString("}}")
		return []byte(b.String())
	}
	attrs := func(n int, key string, value string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%d", key, i)] = value
		}
		return m
	}
	base := ev{Type: typeLog, At: at, JSON: examples.LogLineJSON}
	with := func(id string, f func(*ev)) ev {
		e := base
		e.ID = id
		f(&e)
		return e
	}
	cases := []struct {
		name string
		key  string
		ev   ev
	}{
		{"no id", keyAll, with("", func(*ev) {})},
		{"id against its pattern", keyAll, with("-bad id", func(*ev) {})},
		{"id too long", keyAll, with(strings.Repeat("a", 129), func(*ev) {})},
		{"no type", keyAll, with("d-type", func(e *ev) { e.Type = "" })},
		{"unknown type", keyAll, with("d-unknown", func(e *ev) { e.Type = "examples.Nope" })},
		{"forbidden type", keyRestricted, with("d-forbidden", func(e *ev) { e.Type = typeOrder; e.JSON = examples.OrderPlacedJSON })},
		{"no occurred_at", keyAll, with("d-at", func(e *ev) { e.At = time.Time{} })},
		{"occurred_at too old", keyAll, with("d-old", func(e *ev) { e.At = at.Add(-30 * 24 * time.Hour) })},
		{"no payload", keyAll, with("d-nopayload", func(e *ev) { e.JSON = nil })},
		{"payload unknown field", keyAll, with("d-unknownfield", func(e *ev) { e.JSON = []byte(`{"nope":1}`) })},
		{"payload number out of range", keyAll, with("d-1e999", func(e *ev) {
			e.Type, e.JSON = typeOrder, []byte(`{"total_cents":1e999}`)
		})},
		{"payload rules broken", keyAll, with("d-rules", func(e *ev) { e.JSON = []byte(`{"service":"API"}`) })},
		{"payload bad label keys", keyAll, with("d-labels", func(e *ev) { e.JSON = labels(40, "K") })},
		{"payload too large", keyAll, with("d-large", func(e *ev) { e.JSON = labels(400, "k") })},
		{"partition key too long", keyAll, with("d-key", func(e *ev) { e.Key = strings.Repeat("k", 257) })},
		{"too many attributes", keyAll, with("d-attrs", func(e *ev) { e.Attrs = attrs(17, "a", "v") })},
		{"300 attribute keys", keyAll, with("d-attrs-bomb", func(e *ev) { e.Attrs = attrs(300, "K", "v") })},
		{"bad attribute key", keyAll, with("d-attrkey", func(e *ev) { e.Attrs = map[string]string{"Bad Key": "v"} })},
		{"attribute value too long", keyAll, with("d-attrval", func(e *ev) { e.Attrs = map[string]string{"k": strings.Repeat("v", 257)} })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.postREST(c.key, restBody(c.ev))
			rest := restAnswer(t, resp, body)
			out, err := h.publishGRPC(c.key, c.ev)
			var g answer
			if err != nil {
				g = grpcAnswer(t, nil, err)
			} else {
				g = answer{results: out.GetResults()}
			}
			if rest.whole || g.whole {
				t.Fatalf("a whole refusal: REST %v, gRPC %v", rest, g)
			}
			if len(rest.results) != 1 || len(g.results) != 1 {
				t.Fatalf("results: REST %v, gRPC %v", rest.results, g.results)
			}
			r, gr := rest.results[0].GetRejection(), g.results[0].GetRejection()
			if r == nil || gr == nil {
				t.Fatalf("not refused: REST %v, gRPC %v", rest.results[0], g.results[0])
			}
			if r.GetReason() != gr.GetReason() {
				t.Fatalf("reason: REST %s, gRPC %s", r.GetReason(), gr.GetReason())
			}
			// Map entries are judged in no set order, so which keys a capped
			// list names may differ: keys are compared as [*].
			fields := func(rej *ingestv1.Rejection) []string {
				var out []string
				for _, v := range rej.GetViolations() {
					out = append(out, mapKey.ReplaceAllString(v.GetField(), "[*]")+" "+v.GetRule())
				}
				slices.Sort(out)
				return out
			}
			if !slices.Equal(fields(r), fields(gr)) {
				t.Fatalf("violations:\nREST %v\ngRPC %v", fields(r), fields(gr))
			}
			if len(r.GetViolations()) > h.cfg.Limits.MaxViolationsPerEvent {
				t.Fatalf("%d violations listed, over the cap of %d", len(r.GetViolations()), h.cfg.Limits.MaxViolationsPerEvent)
			}
		})
	}
}

var mapKey = regexp.MustCompile(`\["[^"]*"\]`)

// TestViolationsCapped: a rejection lists at most max_violations_per_event
// violations and says how many more there were, and a response at most
// max_violations_per_response in all.
func TestViolationsCapped(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.Limits.MaxViolationsPerEvent = 5
		c.Limits.MaxViolationsPerResponse = 12
	}})
	at := h.clock.Now()
	var b strings.Builder
	b.WriteString(`{"service":"api","severity":"SEVERITY_INFO","message":"m","timestamp":"` + at.Format(time.RFC3339) + `","host":"example.com","labels":{`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"K%d":"v"`, i)
	}
	b.WriteString("}}")
	var events []ev
	for i := range 4 {
		events = append(events, ev{ID: fmt.Sprintf("cap-%d", i), Type: typeLog, At: at, JSON: []byte(b.String())})
	}
	resp, body := h.postREST(keyAll, restBody(events...))
	a := restAnswer(t, resp, body)
	listed := 0
	for i, r := range a.results {
		rej := r.GetRejection()
		if rej.GetReason() != ingestv1.Reason_SCHEMA_VIOLATION {
			t.Fatalf("event %d: %v", i, r)
		}
		n := len(rej.GetViolations())
		listed += n
		wantN := min(5, 12-5*i)
		wantN = max(wantN, 0)
		if n != wantN {
			t.Errorf("event %d lists %d violations, want %d", i, n, wantN)
		}
		if want := fmt.Sprintf("and %d more", 30-n); !strings.Contains(rej.GetMessage(), want) {
			t.Errorf("event %d: message %q does not say %q", i, rej.GetMessage(), want)
		}
	}
	if listed > 12 {
		t.Errorf("%d violations in the response, over the cap of 12", listed)
	}
}

// TestRESTBodyPastReadTimeout: a body that has not arrived in full by
// http.read_timeout is answered with the typed 400, not a closed
// connection.
func TestRESTBodyPastReadTimeout(t *testing.T) {
	h := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.HTTP.ReadTimeout = 500 * time.Millisecond }})
	conn, err := net.Dial("tcp", h.srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	head := "POST /v1/events HTTP/1.1\r\nHost: x\r\nX-Api-Key: " + keyAll + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
	if _, err := io.WriteString(conn, head+`{"events":[`); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := restAnswer(t, resp, body)
	want{whole: true, reason: ingestv1.Reason_MALFORMED}.check(t, a, true)
}
