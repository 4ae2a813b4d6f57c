package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// gatewayJSON writes an answer as the gateway does (gateway/rest.go
// answerJSON and reflectAnswer: proto names, default values, compacted).
func gatewayJSON(t testing.TB, resp *ingestv1.PublishResponse) []byte {
	t.Helper()
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// gatewayAnswers are the answers a run meets from a healthy gateway:
// accepted (Kafka position), duplicate, rejected by a rule, a batch mixing
// them out of order. The fast parser must read each of them itself.
func gatewayAnswers(t testing.TB) [][]byte {
	kafka := func(p int32, o int64) *ingestv1.EventResult_Kafka {
		return &ingestv1.EventResult_Kafka{Kafka: &ingestv1.KafkaPosition{Topic: "ingest.examples.shop.v1.OrderPlaced", Partition: p, Offset: o}}
	}
	kd := ingestv1.Durability_KAFKA.Enum()
	accepted := &ingestv1.EventResult{Index: 0, Id: "lg0123456789ab-0", Outcome: ingestv1.Outcome_ACCEPTED, Durability: kd, Position: kafka(2, 1234567)}
	dup := &ingestv1.EventResult{Index: 1, Id: "lg0123456789ab-1", Outcome: ingestv1.Outcome_DUPLICATE, Durability: kd, Position: kafka(0, 7)}
	rejected := &ingestv1.EventResult{Index: 2, Id: "lg0123456789ab-2", Outcome: ingestv1.Outcome_REJECTED, Rejection: &ingestv1.Rejection{
		Reason: ingestv1.Reason_SCHEMA_VIOLATION, Message: "currency: value does not match regex pattern `^[A-Z]{3}$`"}}
	return [][]byte{
		gatewayJSON(t, &ingestv1.PublishResponse{Results: []*ingestv1.EventResult{accepted}}),
		gatewayJSON(t, &ingestv1.PublishResponse{Results: []*ingestv1.EventResult{{Index: 0, Id: "lg0123456789ab-1", Outcome: ingestv1.Outcome_DUPLICATE, Durability: kd, Position: kafka(0, 7)}}}),
		gatewayJSON(t, &ingestv1.PublishResponse{Results: []*ingestv1.EventResult{{Index: 0, Id: "lg0123456789ab-2", Outcome: ingestv1.Outcome_REJECTED, Rejection: rejected.Rejection}}}),
		gatewayJSON(t, &ingestv1.PublishResponse{Results: []*ingestv1.EventResult{rejected, accepted, dup}}),
	}
}

// eventsWithIDs are n events; the first ones carry ids.
func eventsWithIDs(n int, ids ...string) []*ingestv1.Event {
	evs := make([]*ingestv1.Event, n)
	for i := range evs {
		evs[i] = &ingestv1.Event{}
		if i < len(ids) {
			evs[i].Id = ids[i]
		}
	}
	return evs
}

func answerIDs(body []byte) []string {
	var ans ingestv1.PublishResponse
	if protojson.Unmarshal(body, &ans) != nil {
		return nil
	}
	ids := make([]string, len(ans.GetResults()))
	for _, r := range ans.GetResults() {
		if i := int(r.GetIndex()); i < len(ids) {
			ids[i] = r.GetId()
		}
	}
	return ids
}

// sameAnswer compares two answers, positions and conflicts as messages.
func sameAnswer(a, b Answer) error {
	if !reflect.DeepEqual(a.Failure, b.Failure) || len(a.Results) != len(b.Results) || (a.Results == nil) != (b.Results == nil) {
		return fmt.Errorf("%+v != %+v", a, b)
	}
	for i := range a.Results {
		x, y := a.Results[i], b.Results[i]
		if !proto.Equal(x.Kafka, y.Kafka) || !proto.Equal(x.Spool, y.Spool) || !proto.Equal(x.Conflict, y.Conflict) {
			return fmt.Errorf("result %d: positions %v %v / %v %v", i, x.Kafka, x.Spool, y.Kafka, y.Spool)
		}
		if (x.Kafka == nil) != (y.Kafka == nil) || (x.Spool == nil) != (y.Spool == nil) || (x.Conflict == nil) != (y.Conflict == nil) {
			return fmt.Errorf("result %d: presence differs", i)
		}
		x.Kafka, x.Spool, x.Conflict, y.Kafka, y.Spool, y.Conflict = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(x, y) {
			return fmt.Errorf("result %d: %+v != %+v", i, x, y)
		}
	}
	return nil
}

// readAnswer is what a REST sender does with an answer: the fast parser,
// and restAnswerReflect for what it does not read.
func readAnswer(p *answerParser, code int, retryAfter string, body []byte, events []*ingestv1.Event) (Answer, error, bool) {
	if ans, err, ok := p.parse(body, events, len(events)); ok {
		return ans, err, true
	}
	ans, err := restAnswerReflect(code, retryAfter, body, len(events))
	return ans, err, false
}

// checkSame reads body as a sender does and through ParseRESTAnswer, and
// both must match restAnswerReflect (the reading before the fast parser).
// It reports whether the fast parser read it.
func checkSame(t *testing.T, code int, retryAfter string, body []byte, events []*ingestv1.Event, p *answerParser) bool {
	t.Helper()
	want, werr := restAnswerReflect(code, retryAfter, body, len(events))
	got, gerr, fast := readAnswer(p, code, retryAfter, body, events)
	pub, perr := ParseRESTAnswer(code, retryAfter, body, len(events))
	for _, c := range []struct {
		name string
		ans  Answer
		err  error
	}{{"sender", got, gerr}, {"ParseRESTAnswer", pub, perr}} {
		if (werr == nil) != (c.err == nil) || (werr != nil && werr.Error() != c.err.Error()) {
			t.Fatalf("body %q (fast %v): %s error %v, want %v", body, fast, c.name, c.err, werr)
		}
		if werr != nil {
			var ae *AnswerError
			if !errors.As(c.err, &ae) {
				t.Fatalf("body %q: %s error is not an AnswerError: %v", body, c.name, c.err)
			}
			continue
		}
		if err := sameAnswer(c.ans, want); err != nil {
			t.Fatalf("body %q (fast %v): %s: %v", body, fast, c.name, err)
		}
	}
	return fast
}

// TestAnswerParserReadsGatewayAnswers: the gateway's answers are read by
// the fast parser itself, to what ParseRESTAnswer reads.
func TestAnswerParserReadsGatewayAnswers(t *testing.T) {
	var p answerParser
	for _, body := range gatewayAnswers(t) {
		ids := answerIDs(body)
		for _, events := range [][]*ingestv1.Event{eventsWithIDs(len(ids), ids...), eventsWithIDs(len(ids))} {
			if !checkSame(t, 200, "", body, events, &p) {
				t.Errorf("the fast parser left %s to ParseRESTAnswer", body)
			}
		}
		if !checkSame(t, 207, "", body, eventsWithIDs(len(ids)+1), &p) {
			t.Errorf("a wrong count is the fast parser's to report: %s", body)
		}
	}
	spaced := []byte(" {\n \"results\" : [ { \"index\" : 0 , \"outcome\" : \"ACCEPTED\" , \"kafka\" : { \"offset\" : -3 , \"partition\" : 1 } } ] }\n")
	if !checkSame(t, 200, "", spaced, eventsWithIDs(1), &p) {
		t.Errorf("the fast parser left spaced JSON to ParseRESTAnswer")
	}
}

// TestAnswerParserLeavesTheRest: what it does not read goes to
// ParseRESTAnswer, with the same answer.
func TestAnswerParserLeavesTheRest(t *testing.T) {
	var p answerParser
	for _, body := range []string{
		`{"results":[{"index":0,"id":"a","outcome":"REJECTED","rejection":{"reason":"BUFFER_FULL","retryable":true,"retry_after":"1.500s"}}]}`,
		`{"results":[{"index":0,"id":"a","outcome":"ACCEPTED","durability":"LOCAL_DISK","spool":{"segment":"3","offset":"9"}}]}`,
		`{"results":[{"index":0,"id":"\u0061","outcome":"ACCEPTED"}]}`,
		`{"results":[{"index":0,"outcome":1}]}`,
		`{"results":[{"index":"0","outcome":"ACCEPTED"}]}`,
		`{"results":[{"index":0,"index":0,"outcome":"ACCEPTED"}]}`,
		`{"results":[{"index":1e0,"outcome":"ACCEPTED"}]}`,
		`{"results":[{"index":0,"outcome":"ACCEPTED","kafka":null}]}`,
		`{"reason":"RATE_LIMITED","retryable":true,"retry_after":"2.100s"}`,
		`{"results":[]} x`,
	} {
		if checkSame(t, 200, "1", []byte(body), eventsWithIDs(1, "a"), &p) {
			t.Errorf("the fast parser read %s", body)
		}
	}
}

// TestAnswerParserAllocations: the answer to a one-event request costs
// the results slice and its Kafka position, the id and topic coming from
// the request and the last answer.
func TestAnswerParserAllocations(t *testing.T) {
	body := gatewayAnswers(t)[0]
	events := eventsWithIDs(1, "lg0123456789ab-0")
	var p answerParser
	allocs := testing.AllocsPerRun(100, func() {
		if _, err, ok := p.parse(body, events, 1); !ok || err != nil {
			t.Fatal(ok, err)
		}
	})
	if allocs > 2 {
		t.Errorf("%v allocations a one-event answer, want at most 2", allocs)
	}
}

// FuzzRESTAnswerParser holds the fast answer parser, with its fallback, to
// restAnswerReflect (ParseRESTAnswer as it was, encoding/json and
// protojson): the same answer or the same error for every body, read as
// a sender reads it and through ParseRESTAnswer.
// withIDs sends the events with the ids the answer names (the fast parser
// then takes the request's strings).
func FuzzRESTAnswerParser(f *testing.F) {
	for _, body := range gatewayAnswers(f) {
		f.Add(200, "", body, uint8(len(answerIDs(body))), true)
		f.Add(207, "", body, uint8(len(answerIDs(body))), false)
	}
	f.Add(503, "2", []byte(`{"results":[{"index":0,"id":"a","outcome":"REJECTED","rejection":{"reason":"BUFFER_FULL","retryable":true,"retry_after":"1.500s","violations":[],"message":""}}]}`), uint8(1), true)
	f.Add(429, "3", []byte(`{"reason":"RATE_LIMITED","retryable":true,"retry_after":"2.100s","violations":[],"message":"slow down"}`), uint8(2), false)
	f.Add(200, "", []byte(`{"results":[{"index":0,"outcome":"ACCEPTED","kafka":{"topic":"t","partition":-1,"offset":-9223372036854775808}}]}`), uint8(1), false)
	f.Fuzz(func(t *testing.T, code int, retryAfter string, body []byte, n uint8, withIDs bool) {
		events := eventsWithIDs(int(n))
		if withIDs {
			events = eventsWithIDs(int(n), answerIDs(body)...)
		}
		var p answerParser
		checkSame(t, code, retryAfter, body, events, &p)
		// A parser that read an answer before reads the next the same.
		checkSame(t, code, retryAfter, body, events, &p)
	})
}

// TestRESTBodyMatchesEncodingJSON: appendRESTBody writes what restBody
// (encoding/json) writes, and leaves to it what it cannot write.
func TestRESTBodyMatchesEncodingJSON(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 12, 5, 9, 1, 2, 300400500, time.UTC))
	ev := func(id, typ, key, payload string, ts *timestamppb.Timestamp) *ingestv1.Event {
		return &ingestv1.Event{Id: id, Type: typ, PartitionKey: key, OccurredAt: ts, Payload: &ingestv1.Event_Json{Json: payload}}
	}
	var cache payloadCache
	for _, tc := range []struct {
		name   string
		events []*ingestv1.Event
		fast   bool
	}{
		{"none", nil, true},
		{"one", []*ingestv1.Event{ev("lg1-0", TypeOrderPlaced, "key-0", `{"order_id":"o-1","note":"a <b> & c"}`, at)}, true},
		{"spaced payload, no key, no time", []*ingestv1.Event{ev("a", "t", "", " { \"x\" : [1, 2] } ", nil)}, true},
		{"several", []*ingestv1.Event{ev("a", "t", "k", `{}`, at), ev("b", "t", "k2", `{"y":"\u00e9"}`, at), ev("c", "t", "k", `{}`, at)}, true},
		{"id to escape", []*ingestv1.Event{ev("a\"b", "t", "k", `{}`, at)}, false},
		{"key to escape", []*ingestv1.Event{ev("a", "t", "<k>", `{}`, at)}, false},
		{"type not ASCII", []*ingestv1.Event{ev("a", "té", "k", `{}`, at)}, false},
		{"payload not JSON", []*ingestv1.Event{ev("a", "t", "k", `{`, at)}, false},
		{"no payload", []*ingestv1.Event{{Id: "a", Type: "t"}}, false},
	} {
		want, werr := restBody(tc.events)
		got, ok := appendRESTBody(nil, tc.events, &cache)
		if ok != tc.fast {
			t.Errorf("%s: fast %v, want %v", tc.name, ok, tc.fast)
		}
		if ok && (werr != nil || !bytes.Equal(got, want)) {
			t.Errorf("%s:\n got %s\nwant %s (%v)", tc.name, got, want, werr)
		}
	}
}

// BenchmarkAnswerParser is a sender reading the answer to a one-event
// request (BenchmarkParseRESTAnswer is the exported function).
func BenchmarkAnswerParser(b *testing.B) {
	body := gatewayAnswers(b)[0]
	events := eventsWithIDs(1, "lg0123456789ab-0")
	var p answerParser
	b.ReportAllocs()
	for b.Loop() {
		if _, err, ok := p.parse(body, events, 1); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// FuzzRESTBody holds appendRESTBody to restBody (encoding/json): the same
// bytes whenever it writes a body, and restBody's verdict when it leaves
// one to it.
func FuzzRESTBody(f *testing.F) {
	f.Add("lg0123456789ab-0", TypeOrderPlaced, "key-7", `{"order_id":"o-1","note":"x"}`, int64(1796461262), int32(300400500), uint8(1))
	f.Add("a", "t", "", " {\"a\" : \"<&>\u2028\"} ", int64(-62135596800), int32(0), uint8(3))
	f.Add("é", "t\n", "\"", `[1,`, int64(253402300800), int32(1), uint8(2))
	f.Fuzz(func(t *testing.T, id, typ, key, payload string, sec int64, nsec int32, n uint8) {
		ts := &timestamppb.Timestamp{Seconds: sec, Nanos: nsec}
		events := make([]*ingestv1.Event, n%4)
		for i := range events {
			events[i] = &ingestv1.Event{Id: id, Type: typ, PartitionKey: key, OccurredAt: ts, Payload: &ingestv1.Event_Json{Json: payload}}
		}
		var cache payloadCache
		for range 2 { // the second time from the cache
			got, ok := appendRESTBody(nil, events, &cache)
			if !ok {
				continue
			}
			want, err := restBody(events)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("\n got %s\nwant %s (%v)", got, want, err)
			}
		}
	})
}

// TestRESTBodyIsInMemory: a request's body is a reader net/http knows is in
// memory, so the transport writes the header and the body at once. For any
// other reader it flushes the header on its own, and the server pays a
// second read per request, which inflates what a gateway is measured at.
func TestRESTBodyIsInMemory(t *testing.T) {
	var body io.ReadCloser
	stop := errors.New("stop")
	base, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &restSender{base: base, client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body = r.Body
		return nil, stop
	})}}
	events := []*ingestv1.Event{{Id: "a", Type: "t", Payload: &ingestv1.Event_Json{Json: `{"a":1}`}}}
	for range 2 { // the second body is built where the first one was
		if _, err := s.Send(context.Background(), events); !errors.Is(err, stop) {
			t.Fatal(err)
		}
		if got, want := reflect.TypeOf(body), reflect.TypeOf(io.NopCloser(bytes.NewReader(nil))); got != want {
			t.Fatalf("the request body is a %v, want a %v", got, want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
