package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/internal/gatewaytest"
	"github.com/sluicehq/sluice/internal/pulltest"
	"github.com/sluicehq/sluice/record"
)

const typeOrder = "examples.shop.v1.OrderPlaced"

// order returns item i of an order feed: the example order with its own
// id, wrapped with an id, a time and a key.
func order(t testing.TB, i int, at time.Time, edit func(map[string]any)) map[string]any {
	var body map[string]any
	if err := json.Unmarshal(examples.OrderPlacedJSON, &body); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("7c9e6679-7425-40de-944b-%012x", i)
	body["order_id"] = id
	it := map[string]any{"id": id, "at": at.UTC().Format(time.RFC3339Nano), "key": "cust-1042", "body": body}
	if edit != nil {
		edit(it)
	}
	return it
}

func orderConfig(name, base string) Config {
	c := testConfig(name, base)
	c.Mapping.Type = eventmap.FixedType(typeOrder)
	return c
}

// TestInvalidItemsTypedRejections: with a real gateway, items that break
// the contract or do not map are counted by reason and do not hold up the
// page; the valid ones reach Kafka and the cursor advances.
func TestInvalidItemsTypedRejections(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	now := time.Now()
	page := []map[string]any{
		order(t, 0, now, nil),
		order(t, 1, now, func(it map[string]any) { it["body"].(map[string]any)["currency"] = "eur" }),
		order(t, 2, now, func(it map[string]any) { delete(it, "id") }),
		order(t, 3, now, func(it map[string]any) { it["body"].(map[string]any)["bogus"] = 1 }),
		order(t, 4, now, func(it map[string]any) { it["at"] = "1999-01-01T00:00:00Z" }),
		order(t, 5, now, func(it map[string]any) { it["id"] = "bad id with spaces" }),
		order(t, 6, now, nil),
	}
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			pulltest.CursorPage(w, page, "c1")
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	clk := pulltest.NewClock()
	store := &pulltest.Store[CursorRecord]{}
	p, m := newTestPoller(t, orderConfig("shop", srv.URL), g.Service, store, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	for _, c := range []struct {
		outcome, reason string
		want            float64
	}{
		{"ACCEPTED", "", 2},
		{"REJECTED", "SCHEMA_VIOLATION", 2}, // the currency, and the event id's pattern
		{"REJECTED", reasonUnmappable, 1},
		{"REJECTED", "MALFORMED", 1},
		{"REJECTED", "EVENT_TIME_OUT_OF_RANGE", 1},
	} {
		if got := counter(t, m, "items", "shop", c.outcome, c.reason); got != c.want {
			t.Errorf("items %s %s = %v, want %v", c.outcome, c.reason, got, c.want)
		}
	}
	if saves := store.Saves(); len(saves) != 1 || saves[0].Cursor != "c1" {
		t.Errorf("saves %+v", saves)
	}
	ids := g.EventIDs(t, record.EventTopic(typeOrder), 2)
	if len(ids) != 2 || ids[page[0]["id"].(string)] != 1 || ids[page[6]["id"].(string)] != 1 {
		t.Errorf("records in Kafka by id: %v", ids)
	}
}

// crashingStore is a store whose process dies at one save: the items of
// the page are acknowledged, the cursor is not saved.
type crashingStore struct {
	*pulltest.Store[CursorRecord]
	mu      sync.Mutex
	crashAt string
	crash   func()
}

var errCrashed = errors.New("process died")

func (s *crashingStore) Save(ctx context.Context, rec CursorRecord) error {
	s.mu.Lock()
	crash := rec.Cursor == s.crashAt && s.crash != nil
	if crash {
		s.crash()
		s.crash = nil
	}
	s.mu.Unlock()
	if crash {
		return errCrashed
	}
	return s.Store.Save(ctx, rec)
}

// TestCrashRepeatsOnePage: a crash after a page's items were acknowledged
// and before its cursor was saved repeats exactly that page on restart;
// its items come back DUPLICATE, Kafka holds every item once, and no page
// is skipped.
func TestCrashRepeatsOnePage(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	now := time.Now()
	var feed []map[string]any
	for i := range 25 {
		feed = append(feed, order(t, i, now, nil))
	}
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		var from int
		fmt.Sscan(r.URL.Query().Get("cursor"), &from)
		to := min(from+10, len(feed))
		next := ""
		if to < len(feed) {
			next = fmt.Sprint(to)
		}
		pulltest.CursorPage(w, feed[from:to], next)
	})
	store := &crashingStore{Store: &pulltest.Store[CursorRecord]{}, crashAt: "20"}
	ctx, cancel := context.WithCancel(context.Background())
	store.crash = cancel
	clk := pulltest.NewClock()
	first, _ := newTestPoller(t, orderConfig("shop", srv.URL), g.Service, store, clk)
	if err := first.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(store.Saves()); got != 1 {
		t.Fatalf("%d saves before the crash, want 1", got)
	}

	// The restarted process: same store, same gateway (its dedup window).
	second, m := newTestPoller(t, orderConfig("shop", srv.URL), g.Service, store, clk)
	stop := pulltest.Run(t, second)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	cursors := srv.Cursors()
	if got := fmt.Sprint(cursors); got != "[ 10 10 20]" {
		t.Errorf("cursors requested %s, want [ 10 10 20]: only the crashed page repeated", got)
	}
	if got := counter(t, m, "items", "shop", "DUPLICATE", ""); got != 10 {
		t.Errorf("repeated page: %v duplicates, want 10", got)
	}
	ids := g.EventIDs(t, record.EventTopic(typeOrder), 25)
	for _, it := range feed {
		if n := ids[it["id"].(string)]; n != 1 {
			t.Errorf("%s in Kafka %d times", it["id"], n)
		}
	}
}

// TestRetryableRejectionRepeatsPage: an item refused retryably holds the
// cursor; the page is polled again after backoff (or the gateway's
// retry_after when longer) and then advanced.
func TestRetryableRejectionRepeatsPage(t *testing.T) {
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			pulltest.CursorPage(w, pulltest.Items("a", 0, 3), "c1")
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	rec := pulltest.NewRecorder()
	rec.Refuse = func(call int, ev *ingestv1.Event) *ingestv1.Rejection {
		if call == 1 && ev.GetId() == "a1" {
			return &ingestv1.Rejection{Reason: ingestv1.Reason_BUFFER_FULL, Retryable: true, RetryAfter: durationpb.New(5 * time.Second)}
		}
		return nil
	}
	clk := pulltest.NewClock()
	store := &pulltest.Store[CursorRecord]{}
	p, m := newTestPoller(t, testConfig("p", srv.URL), rec, store, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	if got := fmt.Sprint(srv.Cursors()); got != "[  c1]" {
		t.Errorf("cursors %s, want the first page twice", got)
	}
	if want := []time.Duration{5 * time.Second, time.Hour}; joinDur(clk.Sleeps()) != joinDur(want) {
		t.Errorf("sleeps %s, want %s", joinDur(clk.Sleeps()), joinDur(want))
	}
	if got := counter(t, m, "pages", "p", "retried"); got != 1 {
		t.Errorf("retried pages %v", got)
	}
	if got := counter(t, m, "items", "p", "DUPLICATE", ""); got != 2 {
		t.Errorf("duplicates %v, want 2 (a0, a2 of the repeated page)", got)
	}
	if ids := rec.IDs(); len(ids) != 3 {
		t.Errorf("ids %v", ids)
	}
}

// TestTypeTable: a feed of several kinds maps each item's own type
// through the mapping's table; a kind the table lacks is counted as
// UNKNOWN_EVENT_TYPE and does not hold up the page.
func TestTypeTable(t *testing.T) {
	items := pulltest.Items("a", 0, 4)
	for i, kind := range []string{"order.placed", "order.refunded", "order.placed", "order.lost"} {
		items[i]["kind"] = kind
	}
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			pulltest.CursorPage(w, items, "c1")
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	cfg := testConfig("p", srv.URL)
	cfg.Mapping.Type = eventmap.TypeFrom(eventmap.Pointer("/kind"))
	cfg.Mapping.Types = map[string]string{"order.placed": "test.Placed", "order.refunded": "test.Refunded"}
	rec := pulltest.NewRecorder()
	var mu sync.Mutex
	types := map[string]string{}
	rec.Refuse = func(_ int, ev *ingestv1.Event) *ingestv1.Rejection {
		mu.Lock()
		defer mu.Unlock()
		types[ev.GetId()] = ev.GetType()
		return nil
	}
	clk := pulltest.NewClock()
	store := &pulltest.Store[CursorRecord]{}
	p, m := newTestPoller(t, cfg, rec, store, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]string{"a0": "test.Placed", "a1": "test.Refunded", "a2": "test.Placed"}; fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("types %v, want %v", types, want)
	}
	if got := counter(t, m, "items", "p", "REJECTED", "UNKNOWN_EVENT_TYPE"); got != 1 {
		t.Errorf("unknown types %v, want 1", got)
	}
	if got := counter(t, m, "items", "p", "ACCEPTED", ""); got != 3 {
		t.Errorf("accepted %v, want 3", got)
	}
	if saves := store.Saves(); len(saves) != 1 || saves[0].Cursor != "c1" {
		t.Errorf("saves %+v", saves)
	}
}
