package eventmap

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

var received = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Deliveries as the providers document them, trimmed to what the
// mapping reads.
const (
	stripeBody = `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","api_version":"2022-11-15","created":1686089970,` +
		`"type":"invoice.paid","data":{"object":{"id":"in_1NG8Dt2eZvKYlo2C","customer":"cus_9s6XKzkNRiz8i3"}}}`
	githubBody  = `{"action":"opened","issue":{"number":1347},"repository":{"full_name":"octocat/Hello-World"}}`
	shopifyBody = `{"id":820982911946154508,"email":"jon@example.com","created_at":"2023-03-29T14:00:27-04:00"}`
)

func TestMap(t *testing.T) {
	github := Config{ID: Header("X-GitHub-Delivery"), Type: TypeFrom(Header("X-GitHub-Event")),
		Types: map[string]string{"issues": "github.v1.Issues"}, PartitionKey: Pointer("/repository/full_name")}
	githubHeader := http.Header{"X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "X-Github-Event": {"issues"}}
	stripe := Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), Types: map[string]string{"invoice.paid": "stripe.v1.InvoicePaid"},
		OccurredAt: Pointer("/created"), PartitionKey: Pointer("/data/object/customer")}
	shopify := Config{ID: Header("X-Shopify-Webhook-Id"), Type: TypeFrom(Header("X-Shopify-Topic")),
		Types: map[string]string{"orders/create": "shopify.v1.Order"}, OccurredAt: Header("X-Shopify-Triggered-At")}
	shopifyHeader := http.Header{"X-Shopify-Webhook-Id": {"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"}, "X-Shopify-Topic": {"orders/create"},
		"X-Shopify-Triggered-At": {"2023-03-29T18:00:27.877041743Z"}}
	standard := Config{ID: Header("webhook-id"), Type: TypeFrom(Pointer("/type")), DefaultType: "acme.v1.Event"}
	item := Config{ID: Pointer("/id"), Type: FixedType("test.Item"), OccurredAt: Pointer("/at"), PartitionKey: Pointer("/key"), Payload: "/body"}

	type want struct {
		id, typ, key string
		at           time.Time
		payload      string
	}
	for _, c := range []struct {
		name string
		cfg  Config
		in   Input
		want want
	}{
		{"stripe", stripe, Input{Doc: []byte(stripeBody), Time: received},
			want{"evt_1NG8Du2eZvKYlo2CUI79vXWy", "stripe.v1.InvoicePaid", "cus_9s6XKzkNRiz8i3", time.Unix(1686089970, 0), stripeBody}},
		{"github", github, Input{Doc: []byte(githubBody), Header: githubHeader, Time: received},
			want{"72d3162e-cc78-11e3-81ab-4c9367dc0958", "github.v1.Issues", "octocat/Hello-World", received, githubBody}},
		{"shopify", shopify, Input{Doc: []byte(" \n" + shopifyBody + "\n"), Header: shopifyHeader, Time: received},
			want{"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "shopify.v1.Order", "", time.Date(2023, 3, 29, 18, 0, 27, 877041743, time.UTC), shopifyBody}},
		{"standard webhooks, catch-all type", standard,
			Input{Doc: []byte(`{"type":"user.created","data":{}}`), Header: http.Header{"Webhook-Id": {"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}}, Time: time.Unix(1674087231, 0)},
			want{"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "acme.v1.Event", "", time.Unix(1674087231, 0), `{"type":"user.created","data":{}}`}},
		{"integer id, fractional seconds, null key", item,
			Input{Doc: []byte(`{"id":12345678901234567890,"at":1764417600.5,"key":null,"body":{"n":1}}`), Time: received},
			want{"12345678901234567890", "test.Item", "", time.Unix(1764417600, 5e8), `{"n":1}`}},
		{"missing key", item, Input{Doc: []byte(`{"id":"a","at":"2026-11-29T11:59:00+01:00","body":{}}`), Time: received},
			want{"a", "test.Item", "", time.Date(2026, 11, 29, 10, 59, 0, 0, time.UTC), `{}`}},
		{"number key", item, Input{Doc: []byte(`{"id":"a","at":0,"key":42,"body":{}}`)},
			want{"a", "test.Item", "42", time.Unix(0, 0), `{}`}},
		{"header time in seconds", Config{ID: Header("Id"), Type: FixedType("a.B"), OccurredAt: Header("X-Time")},
			Input{Doc: []byte(`{}`), Header: http.Header{"Id": {"1"}, "X-Time": {"1674087231.25"}}},
			want{"1", "a.B", "", time.Unix(1674087231, 25e7), `{}`}},
		{"header key", Config{ID: Header("Id"), Type: FixedType("a.B"), PartitionKey: Header("X-Key")},
			Input{Doc: []byte(`{}`), Header: http.Header{"Id": {"1"}, "X-Key": {"tenant-7"}}, Time: received},
			want{"1", "a.B", "tenant-7", received, `{}`}},
	} {
		m, err := New(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ev, err := m.Map(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ev.GetId() != c.want.id || ev.GetType() != c.want.typ || ev.GetPartitionKey() != c.want.key ||
			!ev.GetOccurredAt().AsTime().Equal(c.want.at) || ev.GetJson() != c.want.payload {
			t.Errorf("%s: got id %q type %q key %q at %v payload %s\nwant %+v", c.name, ev.GetId(), ev.GetType(), ev.GetPartitionKey(),
				ev.GetOccurredAt().AsTime(), ev.GetJson(), c.want)
		}
	}
}

// TestMapRefusals: a document that does not map is a *FieldError naming
// the field; an unmapped provider type is an *UnknownTypeError in it.
func TestMapRefusals(t *testing.T) {
	github := Config{ID: Header("X-GitHub-Delivery"), Type: TypeFrom(Header("X-GitHub-Event")), Types: map[string]string{"push": "github.v1.Push"}}
	stripe := Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), Types: map[string]string{"invoice.paid": "stripe.v1.InvoicePaid"},
		OccurredAt: Pointer("/created"), PartitionKey: Pointer("/data/object/customer")}
	item := Config{ID: Pointer("/id"), Type: FixedType("test.Item"), OccurredAt: Pointer("/at"), Payload: "/body"}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	for _, c := range []struct {
		name    string
		cfg     Config
		in      Input
		field   string
		unknown string // the provider type of an *UnknownTypeError
		missing bool   // errors.Is errMissing
	}{
		{"no delivery header", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Event", "push"), Time: received}, "id", "", true},
		{"empty delivery header", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "", "X-GitHub-Event", "push"), Time: received}, "id", "", true},
		{"delivery header twice", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Delivery", "b", "X-GitHub-Event", "push"), Time: received}, "id", "", false},
		{"no event header", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "a"), Time: received}, "type", "", true},
		{"event header twice", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Event", "push", "X-GitHub-Event", "issues"), Time: received}, "type", "", false},
		{"unmapped type", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Event", "issues"), Time: received}, "type", "issues", false},
		{"types are case-sensitive", github, Input{Doc: []byte(githubBody), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Event", "Push"), Time: received}, "type", "Push", false},
		{"body not JSON", github, Input{Doc: []byte(`{"a":`), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Event", "push"), Time: received}, "payload", "", false},
		{"body an array", github, Input{Doc: []byte(`[{}]`), Header: h("X-GitHub-Delivery", "a", "X-GitHub-Event", "push"), Time: received}, "payload", "", false},
		{"no headers at all", github, Input{Doc: []byte(`{}`), Time: received}, "id", "", true},
		{"stripe unmapped type", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"charge.refunded","created":1}`), Time: received}, "type", "charge.refunded", false},
		{"stripe type not a string", stripe, Input{Doc: []byte(`{"id":"evt_1","type":{"a":1},"created":1}`), Time: received}, "type", "", false},
		{"stripe type empty", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"","created":1}`), Time: received}, "type", "", true},
		{"stripe created not seconds", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"invoice.paid","created":"yesterday"}`), Time: received}, "occurred_at", "", false},
		{"stripe created negative", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"invoice.paid","created":-1}`), Time: received}, "occurred_at", "", false},
		{"stripe created as a string of digits", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"invoice.paid","created":"1686089970"}`), Time: received}, "occurred_at", "", false},
		{"stripe no created", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"invoice.paid"}`), Time: received}, "occurred_at", "", true},
		{"stripe customer an object", stripe, Input{Doc: []byte(`{"id":"evt_1","type":"invoice.paid","created":1,"data":{"object":{"customer":{}}}}`), Time: received}, "partition_key", "", false},
		{"id null", item, Input{Doc: []byte(`{"id":null,"at":1,"body":{}}`)}, "id", "", true},
		{"id empty", item, Input{Doc: []byte(`{"id":"","at":1,"body":{}}`)}, "id", "", false},
		{"id a boolean", item, Input{Doc: []byte(`{"id":true,"at":1,"body":{}}`)}, "id", "", false},
		{"time not RFC 3339", item, Input{Doc: []byte(`{"id":"a","at":"2026-11-29 11:59:00","body":{}}`)}, "occurred_at", "", false},
		{"time past 9999", item, Input{Doc: []byte(`{"id":"a","at":253402300800,"body":{}}`)}, "occurred_at", "", false},
		{"payload a string", item, Input{Doc: []byte(`{"id":"a","at":1,"body":"{}"}`)}, "payload", "", false},
		{"payload missing", item, Input{Doc: []byte(`{"id":"a","at":1}`)}, "payload", "", false},
		{"no time given", Config{ID: Pointer("/id"), Type: FixedType("a.B")}, Input{Doc: []byte(`{"id":"a"}`)}, "occurred_at", "", false},
		{"header time not a time", Config{ID: Pointer("/id"), Type: FixedType("a.B"), OccurredAt: Header("X-At")},
			Input{Doc: []byte(`{"id":"a"}`), Header: h("X-At", "Wed, 29 Mar 2023 18:00:27 GMT")}, "occurred_at", "", false},
		{"header key twice", Config{ID: Pointer("/id"), Type: FixedType("a.B"), PartitionKey: Header("X-Key")},
			Input{Doc: []byte(`{"id":"a"}`), Header: h("X-Key", "a", "X-Key", "b"), Time: received}, "partition_key", "", false},
	} {
		m, err := New(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ev, err := m.Map(c.in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v, %v; want a *FieldError on %s", c.name, ev, err, c.field)
			continue
		}
		ut, isUnknown := errors.AsType[*UnknownTypeError](err)
		if (c.unknown != "") != isUnknown || (isUnknown && ut.Type != c.unknown) {
			t.Errorf("%s: %v: want unknown provider type %q", c.name, err, c.unknown)
		}
		if errors.Is(err, errMissing) != c.missing {
			t.Errorf("%s: %v: missing %v, want %v", c.name, err, errors.Is(err, errMissing), c.missing)
		}
	}
}

// TestMapHeaderNames: header names are matched as HTTP matches them,
// whatever case the config writes them in.
func TestMapHeaderNames(t *testing.T) {
	m, err := New(Config{ID: Header("webhook-id"), Type: TypeFrom(Header("x-github-event")), Types: map[string]string{"push": "a.B"}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	r.Header.Set("WEBHOOK-ID", "msg_1")
	r.Header.Set("X-GitHub-Event", "push")
	ev, err := m.Map(Input{Doc: []byte(`{}`), Header: r.Header, Time: received})
	if err != nil || ev.GetId() != "msg_1" || ev.GetType() != "a.B" {
		t.Fatalf("%v, %v", ev, err)
	}
}

// TestMapConcurrent: one Mapping serves concurrent deliveries (run with
// -race).
func TestMapConcurrent(t *testing.T) {
	m, err := New(Config{ID: Pointer("/id"), Type: TypeFrom(Header("X-Type")), Types: map[string]string{"a": "x.A", "b": "x.B"},
		PartitionKey: Pointer("/k")})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			typ := []string{"a", "b"}[g%2]
			for i := range 200 {
				id := fmt.Sprintf("evt_%d_%d", g, i)
				ev, err := m.Map(Input{Doc: []byte(`{"id":"` + id + `","k":` + fmt.Sprint(i) + `}`),
					Header: http.Header{"X-Type": {typ}}, Time: received})
				if err != nil || ev.GetId() != id || ev.GetType() != "x."+strings.ToUpper(typ) || ev.GetPartitionKey() != fmt.Sprint(i) {
					errs <- fmt.Errorf("%s: %v, %v", id, ev, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
