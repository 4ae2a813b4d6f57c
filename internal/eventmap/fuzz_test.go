package eventmap

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// FuzzMap: any document, pointers, headers and type table map to an
// event whose id is not empty, whose type is one of ContractTypes and
// whose payload is a JSON object, or to a *FieldError; never a panic.
//
// A source that starts with "h:" is a header named by the rest; headers
// is "name: value" lines. table is "provider=contract" lines; a line
// without '=' is the default type. The seeds are the pollers' item seeds
// (FuzzMapItem, as it was in package pull) and the providers' deliveries.
func FuzzMap(f *testing.F) {
	for _, s := range [][]string{
		{`{"id":"a1","at":"2026-11-29T11:59:00Z","key":"k","body":{"n":1}}`, "/id", "", "/at", "/key", "/body", "", ""},
		{`{"id":12345678901234567890,"at":1764417600.5,"body":{}}`, "/id", "", "/at", "/key", "/body", "", ""},
		{`{"a/b":{"~c":[{"id":"x"}]}}`, "/a~1b/~0c/0/id", "", "", "", "", "", ""},
		{`[1,2,{"id":"z"}]`, "/2/id", "", "", "/0", "", "", ""},
		{`{"id":null,"at":"yesterday"}`, "/id", "", "/at", "/missing", "/01", "", ""},
		{`{"id":"x","body":"str"}`, "/id", "", "", "", "/body", "", ""},
		{stripeBody, "/id", "/type", "/created", "/data/object/customer", "", "", "invoice.paid=stripe.v1.InvoicePaid"},
		{githubBody, "h:X-GitHub-Delivery", "h:X-GitHub-Event", "", "/repository/full_name", "",
			"X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\nX-GitHub-Event: issues", "push=github.v1.Push\ngithub.v1.Event"},
		{shopifyBody, "h:X-Shopify-Webhook-Id", "h:X-Shopify-Topic", "h:X-Shopify-Triggered-At", "", "",
			"X-Shopify-Webhook-Id: b54557e4-bdd9-4b37-8a5f-bf7d70bcd043\nX-Shopify-Topic: orders/create\nX-Shopify-Triggered-At: 2023-03-29T18:00:27.877041743Z",
			"orders/create=shopify.v1.Order"},
		{`{"type":"user.created"}`, "h:webhook-id", "/type", "h:webhook-timestamp", "h:webhook-id", "",
			"webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W\nwebhook-timestamp: 1674087231\nwebhook-id: again", "acme.v1.Event"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7])
	}
	source := func(s string) Source {
		if name, ok := strings.CutPrefix(s, "h:"); ok {
			return Header(name)
		}
		return Pointer(s)
	}
	f.Fuzz(func(t *testing.T, doc, id, typ, at, key, payload, headers, table string) {
		cfg := Config{ID: source(id), OccurredAt: source(at), PartitionKey: source(key), Payload: payload}
		if typ == "" {
			cfg.Type = FixedType("t.Fixed")
		} else {
			cfg.Type = TypeFrom(source(typ))
			for _, line := range strings.Split(table, "\n") {
				if p, c, ok := strings.Cut(line, "="); ok {
					if cfg.Types == nil {
						cfg.Types = map[string]string{}
					}
					cfg.Types[p] = c
				} else {
					cfg.DefaultType = line
				}
			}
		}
		m, err := New(cfg)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New: %T %v is not a *ConfigError", err, err)
			}
			return
		}
		h := http.Header{}
		for _, line := range strings.Split(headers, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				h.Add(k, strings.TrimSpace(v))
			}
		}
		ev, err := m.Map(Input{Doc: []byte(doc), Header: h, Time: received})
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			return
		}
		if ev.GetId() == "" || ev.GetOccurredAt() == nil {
			t.Fatalf("event %v", ev)
		}
		if !slices.Contains(cfg.ContractTypes(), ev.GetType()) {
			t.Fatalf("type %q is not one of %v", ev.GetType(), cfg.ContractTypes())
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ev.GetJson()), &obj); err != nil {
			t.Fatalf("payload %q is not a JSON object: %v", ev.GetJson(), err)
		}
	})
}
