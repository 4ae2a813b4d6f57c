package cloudevents_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/cloudevents/sdk-go/v2/types"

	"github.com/sluicehq/sluice/gateway/cloudevents"
)

// received is what the test server decoded from one request.
type received struct {
	dec     cloudevents.Decoded
	refused *cloudevents.Refusal
}

// decodingServer is an httptest server whose handler decodes each request
// with Decode under l, answers 200 (or 400 when anything is refused) and
// keeps what it decoded.
type decodingServer struct {
	*httptest.Server
	mu   sync.Mutex
	got  []received
	lim  cloudevents.Limits
	seen chan struct{}
}

func newDecodingServer(t *testing.T, l cloudevents.Limits) *decodingServer {
	t.Helper()
	s := &decodingServer{lim: l, seen: make(chan struct{}, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, int64(l.MaxBodyBytes)+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		dec, refused := cloudevents.Decode(r.Header, body, l)
		s.mu.Lock()
		s.got = append(s.got, received{dec, refused})
		s.mu.Unlock()
		if refused != nil || dec.Refused != nil {
			http.Error(w, "refused", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

// last is what the server decoded last.
func (s *decodingServer) last(t *testing.T) received {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		t.Fatal("the server decoded nothing")
	}
	return s.got[len(s.got)-1]
}

// sdkEvents are events as a CloudEvents producer builds them with the Go
// SDK: JSON data, protobuf bytes, extensions of each type, with and
// without the optional attributes.
func sdkEvents(t *testing.T) []event.Event {
	t.Helper()
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.FixedZone("", 2*3600))

	full := ce.NewEvent()
	full.SetID("3f6a1f0e-62a7-4c4e-9e5f-bd1a1ad1b001")
	full.SetSource("https://shop.example.com/orders")
	full.SetType("com.example.order.placed")
	full.SetSubject("order/1001")
	full.SetTime(at)
	full.SetDataSchema("https://schemas.example.com/order-placed.json")
	full.SetExtension("tenant", "acme")
	full.SetExtension("attempt", 3)
	full.SetExtension("replay", false)
	full.SetExtension("partitionkey", "customer-42")
	if err := full.SetData(ce.ApplicationJSON, map[string]any{"order_id": "1001", "total": 42.5, "items": []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}

	minimal := ce.NewEvent()
	minimal.SetID("min-1")
	minimal.SetSource("/sensors/tn-1234567")
	minimal.SetType("com.example.reading")
	if err := minimal.SetData("application/json; charset=utf-8", []byte(`{"celsius":21.5}`)); err != nil {
		t.Fatal(err)
	}

	proto := ce.NewEvent()
	proto.SetID("pb-1")
	proto.SetSource("urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66")
	proto.SetType("com.example.order.shipped")
	proto.SetTime(at.UTC())
	proto.SetExtension("region", "eu-west-1")
	if err := proto.SetData("application/protobuf", []byte{0x0a, 0x04, 0x31, 0x30, 0x30, 0x31, 0x10, 0x2a}); err != nil {
		t.Fatal(err)
	}

	unicode := ce.NewEvent()
	unicode.SetID("u-1")
	// Non-ASCII text, which the SDK writes into binary-mode headers as
	// UTF-8 (it does not percent-encode; see TestPercentDecoding), and a
	// source without '%' for the same reason: the SDK writes a URI
	// reference's escapes as they are.
	unicode.SetSource("/cafe")
	unicode.SetType("com.example.greeting")
	unicode.SetSubject("Grüße aus Köln")
	unicode.SetExtension("note", "ünïcödé, emoji 😀")
	if err := unicode.SetData(ce.ApplicationJSON, map[string]string{"text": "héllo"}); err != nil {
		t.Fatal(err)
	}
	return []event.Event{full, minimal, proto, unicode}
}

// sameEvent fails t unless got is sent as Decode should read it.
func sameEvent(t *testing.T, mode string, got cloudevents.Event, sent event.Event) {
	t.Helper()
	fail := func(what string, g, w any) { t.Errorf("%s %s: %s %v, want %v", mode, sent.ID(), what, g, w) }
	if got.SpecVersion != "1.0" {
		fail("specversion", got.SpecVersion, "1.0")
	}
	if got.ID != sent.ID() {
		fail("id", got.ID, sent.ID())
	}
	if got.Source != sent.Source() {
		fail("source", got.Source, sent.Source())
	}
	if got.Type != sent.Type() {
		fail("type", got.Type, sent.Type())
	}
	if got.Subject != sent.Subject() {
		fail("subject", got.Subject, sent.Subject())
	}
	if got.HasTime != !sent.Time().IsZero() || !got.Time.Equal(sent.Time()) {
		fail("time", got.Time, sent.Time())
	}
	if got.DataSchema != sent.DataSchema() {
		fail("dataschema", got.DataSchema, sent.DataSchema())
	}
	if got.DataContentType != sent.DataContentType() {
		fail("datacontenttype", got.DataContentType, sent.DataContentType())
	}
	want := map[string]string{}
	for k, v := range sent.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = s
	}
	if len(got.Extensions) != len(want) {
		fail("extensions", got.Extensions, want)
	}
	for k, v := range want {
		if got.Extensions[k] != v {
			fail("extension "+k, got.Extensions[k], v)
		}
	}
	wantKey := sent.Subject()
	if pk, ok := want["partitionkey"]; ok {
		wantKey = pk
	}
	if got.PartitionKey != wantKey {
		fail("partition key", got.PartitionKey, wantKey)
	}
	if strings.HasPrefix(sent.DataContentType(), "application/protobuf") {
		if string(got.Binary) != string(sent.Data()) || got.JSON != "" {
			fail("binary data", got.Binary, sent.Data())
		}
	} else if got.JSON != string(sent.Data()) || got.Binary != nil {
		fail("JSON data", got.JSON, string(sent.Data()))
	}
}

// TestSDKClient sends events with the CloudEvents Go SDK's HTTP client, in
// structured and binary mode, and with its batch request, to a server that
// decodes them with Decode: each decodes to what was sent.
func TestSDKClient(t *testing.T) {
	srv := newDecodingServer(t, cloudevents.NewDefaultLimits())
	// The SDK's HTTP protocol and client, without NewClientHTTP's defaults
	// (which give events without a time the time of sending).
	p, err := cehttp.New(cehttp.WithTarget(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	events := sdkEvents(t)
	for _, m := range []struct {
		name string
		ctx  func(context.Context) context.Context
		mode cloudevents.Mode
	}{
		{"structured", ce.WithEncodingStructured, cloudevents.Structured},
		{"binary", ce.WithEncodingBinary, cloudevents.Binary},
	} {
		for _, sent := range events {
			if res := client.Send(m.ctx(context.Background()), sent); !ce.IsACK(res) {
				t.Fatalf("%s %s: the server did not accept it: %v; decoded %+v", m.name, sent.ID(), res, srv.last(t))
			}
			got := srv.last(t)
			if got.refused != nil || got.dec.Refused != nil || got.dec.Mode != m.mode || len(got.dec.Events) != 1 {
				t.Fatalf("%s %s: decoded %+v", m.name, sent.ID(), got)
			}
			sameEvent(t, m.name, got.dec.Events[0], sent)
		}
	}

	req, err := cehttp.NewHTTPRequestFromEvents(context.Background(), srv.URL, events)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := srv.last(t)
	if resp.StatusCode != http.StatusOK || got.dec.Mode != cloudevents.Batch || len(got.dec.Events) != len(events) {
		t.Fatalf("batch: status %d, decoded %+v", resp.StatusCode, got)
	}
	for i, sent := range events {
		sameEvent(t, "batch", got.dec.Events[i], sent)
	}
}

// TestSDKReadsWhatDecodeRead: what Decode accepts from the SDK's own
// requests, the SDK's own reader reads the same way (the two agree on
// the event, request by request).
func TestSDKReadsWhatDecodeRead(t *testing.T) {
	for _, sent := range sdkEvents(t) {
		for _, force := range []func(context.Context) context.Context{ce.WithEncodingStructured, ce.WithEncodingBinary} {
			req, err := http.NewRequest(http.MethodPost, "http://sluice.test/v1/cloudevents", nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := force(context.Background())
			if err := cehttp.WriteRequest(ctx, binding.ToMessage(&sent), req); err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			dec, refused := cloudevents.Decode(req.Header, body, cloudevents.NewDefaultLimits())
			if refused != nil || dec.Refused != nil {
				t.Fatalf("%s: refused %v %v", sent.ID(), refused, dec.Refused)
			}
			req.Body = io.NopCloser(strings.NewReader(string(body)))
			back, err := cehttp.NewEventFromHTTPRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			sameEvent(t, dec.Mode.String()+" (SDK reader)", dec.Events[0], *back)
		}
	}
}
