package pull

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/jsonpointer"
)

var fuzzNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// FuzzRateLimit: any header values give a non-negative remaining count
// and a bounded reset, or nothing.
func FuzzRateLimit(f *testing.F) {
	for _, c := range [][3]string{
		{`"default";r=0;t=30`, "", ""},
		{`"a";r=5;t=1, "b";r=0;t=60`, "", ""},
		{`limit=100, remaining=0, reset=20`, "", ""},
		{"", "0", "1764417600"},
		{"", "3", "1764417600000"},
		{`"x";r=0;t=1e9`, "1", "nan"},
		{`"q\"uo;te";r=0;t=5`, "-1", "-5"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, structured, remaining, reset string) {
		for _, h := range []http.Header{
			{"Ratelimit": {structured}},
			{"Ratelimit": {structured}, "Ratelimit-Policy": {remaining}},
			{"Ratelimit-Remaining": {remaining}, "Ratelimit-Reset": {reset}},
			{"X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}},
		} {
			a, ok := parseRateLimit(h, fuzzNow)
			if !ok {
				continue
			}
			if a.remaining < 0 || a.reset < 0 || a.reset > maxWaitSeconds*time.Second {
				t.Fatalf("%v: advice %+v", h, a)
			}
		}
	})
}

// FuzzLinkNext: any Link values give a resolved URL or nothing; a found
// link is absolute when the base is.
func FuzzLinkNext(f *testing.F) {
	for _, s := range []string{
		`<https://api.example/items?page=2>; rel="next"`,
		`</items?after=10>; rel=next, </items?after=0>; rel="prev first"`,
		`<a,b>; rel="next last"; title="x, y"`,
		`<>; rel=next`, `<https://x/>; rel="nexT"`, `<https://x/;rel=next>`, `<`, `,,;;"`,
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://api.example/items?page=1")
	f.Fuzz(func(t *testing.T, v string) {
		u, ok := parseLinkNext([]string{v}, base)
		if ok && (u == nil || !u.IsAbs()) {
			t.Fatalf("%q: next %v is not absolute", v, u)
		}
	})
}

// FuzzMapItem: any page body and pointers give the poller's items, each
// mapped to an event whose id is not empty and whose payload is a JSON
// object, or to a *mappingError with the item's index; a body that has
// no items at the pointer is an error, never a panic. The mapping itself
// is package eventmap's (FuzzMap there); this is the poller's use of it.
func FuzzMapItem(f *testing.F) {
	f.Add(`{"id":"a1","at":"2026-11-29T11:59:00Z","key":"k","body":{"n":1}}`, "/id", "/at", "/key", "/body")
	f.Add(`{"id":12345678901234567890,"at":1764417600.5,"body":{}}`, "/id", "/at", "/key", "/body")
	f.Add(`{"a/b":{"~c":[{"id":"x"}]}}`, "/a~1b/~0c/0/id", "", "", "")
	f.Add(`[1,2,{"id":"z"}]`, "/2/id", "", "/0", "")
	f.Add(`{"id":null,"at":"yesterday"}`, "/id", "/at", "/missing", "/01")
	f.Add(`{"id":"x","body":"str"}`, "/id", "", "", "/body")
	f.Add(`{"data":[{"id":"a","b":{}},{"id":1,"b":{}},{"b":{}},7]}`, "/id", "", "", "/b")
	f.Fuzz(func(t *testing.T, item, id, at, key, payload string) {
		m, err := eventmap.New(MappingConfig{ID: eventmap.Pointer(id), Type: eventmap.FixedType("t"),
			OccurredAt: eventmap.Pointer(at), PartitionKey: eventmap.Pointer(key), Payload: payload})
		if err != nil {
			return // a bad pointer: Validate refuses the poller
		}
		body := []byte(item)
		for _, items := range []string{"", "/data", id} {
			raw, err := pageItems(jsonpointer.NewDoc(body), body, items)
			if err != nil {
				continue
			}
			for i, it := range append(raw, json.RawMessage(item)) {
				ev, err := mapItem(m, i, it, fuzzNow)
				if err != nil {
					if me, ok := err.(*mappingError); !ok || me.Index != i {
						t.Fatalf("error %T %v is not a *mappingError of item %d", err, err, i)
					}
					continue
				}
				if ev.GetId() == "" || ev.GetOccurredAt() == nil || ev.GetType() != "t" {
					t.Fatalf("event %v", ev)
				}
				var obj map[string]json.RawMessage
				if err := json.Unmarshal([]byte(ev.GetJson()), &obj); err != nil {
					t.Fatalf("payload %q is not a JSON object: %v", ev.GetJson(), err)
				}
			}
		}
	})
}
