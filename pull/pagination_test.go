package pull

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pulltest"
)

// pagedPartner serves items a0..a(total-1) ten at a time in one of the
// three pagination styles; total may grow while the poller runs.
func pagedPartner(t *testing.T, mode string, total *atomic.Int32) *pulltest.Partner {
	return pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		all := int(total.Load())
		var from int
		switch mode {
		case PaginateCursor:
			from, _ = strconv.Atoi(q.Get("cursor"))
		case PaginateLink:
			from, _ = strconv.Atoi(q.Get("after"))
		case PaginatePage:
			p, _ := strconv.Atoi(q.Get("page"))
			from = (p - 1) * 10
		}
		to := max(min(from+10, all), from)
		its := pulltest.Items("a", from, to)
		switch mode {
		case PaginateCursor:
			next := ""
			if to < all {
				next = strconv.Itoa(to)
			}
			pulltest.CursorPage(w, its, next)
		case PaginateLink:
			if to < all {
				w.Header().Add("Link", `<https://elsewhere.example/>; rel="prev"`)
				w.Header().Add("Link", fmt.Sprintf(`</items?after=%d>; rel="next"; title="more, please"`, to))
			}
			pulltest.WriteJSON(w, http.StatusOK, its) // the body is the array
		case PaginatePage:
			pulltest.WriteJSON(w, http.StatusOK, map[string]any{"data": its})
		}
	})
}

// TestPagination: every item is admitted exactly once and no page is
// skipped, for each style, also when the feed grows after the poller
// caught up (the last, partial page is polled again, not advanced past).
func TestPagination(t *testing.T) {
	for _, mode := range []string{PaginateCursor, PaginateLink, PaginatePage} {
		t.Run(mode, func(t *testing.T) {
			var total atomic.Int32
			total.Store(25)
			srv := pagedPartner(t, mode, &total)
			cfg := testConfig("p", srv.URL)
			cfg.Interval = time.Minute // not parked: the poller polls again when caught up
			cfg.Pagination.Type = mode
			switch mode {
			case PaginateLink:
				cfg.Items = ""
			case PaginatePage:
				cfg.URL = srv.URL + "/items?page={page}"
				cfg.Pagination.PageSize = 10
			}
			clk := pulltest.NewClock()
			rec := pulltest.NewRecorder()
			store := &pulltest.Store[CursorRecord]{}
			p, m := newTestPoller(t, cfg, rec, store, clk)
			stop := pulltest.Run(t, p)
			eventually(t, "25 items", func() bool { return len(rec.IDs()) == 25 })
			eventually(t, "the last page polled again", func() bool { return counter(t, m, "pages", "p", "committed") >= 4 })
			total.Store(32)
			eventually(t, "32 items", func() bool { return len(rec.IDs()) == 32 })
			stop()
			for i := range 32 {
				if n := rec.IDs()[fmt.Sprint("a", i)]; n != 1 {
					t.Errorf("item a%d accepted %d times", i, n)
				}
			}
			if len(rec.IDs()) != 32 {
				t.Errorf("%d items, want 32", len(rec.IDs()))
			}
			var positions []string
			for _, s := range store.Saves() {
				positions = append(positions, fmt.Sprintf("%s|%s|%d", s.Cursor, s.URL, s.Page))
			}
			want := map[string]string{
				PaginateCursor: "10||0 20||0 30||0",
				PaginateLink:   fmt.Sprintf("|%[1]s/items?after=10|0 |%[1]s/items?after=20|0 |%[1]s/items?after=30|0", srv.URL),
				PaginatePage:   "||2 ||3 ||4",
			}[mode]
			if got := strings.Join(positions, " "); got != want {
				t.Errorf("saved positions %q, want %q", got, want)
			}
		})
	}
}

// TestLinkToAnotherOrigin: a next link to another origin (another port of
// the same host, here) fails the page: nothing is sent there, the
// position stays.
func TestLinkToAnotherOrigin(t *testing.T) {
	attacker := attackerLinks(t)
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", fmt.Sprintf(`<%s/items?after=10>; rel="next"`, attacker.URL))
		pulltest.WriteJSON(w, http.StatusOK, pulltest.Items("a", 0, 2))
	})
	cfg := linkConfig(srv.URL)
	cfg.Backoff.Initial = 2 * time.Hour // parks after the failure
	cfg.Backoff.Max = 2 * time.Hour
	clk := pulltest.NewClock()
	store := &pulltest.Store[CursorRecord]{}
	rec := pulltest.NewRecorder()
	p, _ := newTestPoller(t, cfg, rec, store, clk, WithGetenv(getenv))
	stop := pulltest.Run(t, p)
	eventually(t, "the page to fail", func() bool { return clk.Parked() > 0 })
	stop()
	if f := p.Status().LastFailure; f == nil || !strings.Contains(f.Reason, "leaves the partner's origin") {
		t.Errorf("last failure %+v", f)
	}
	if len(store.Saves()) != 0 || len(rec.IDs()) != 0 {
		t.Errorf("saves %v, items %v", store.Saves(), rec.IDs())
	}
	if n := len(attacker.Requests()); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}

// TestFirstURL: with no cursor yet the first URL is requested, then the
// template with the cursor, query-escaped.
func TestFirstURL(t *testing.T) {
	srv := pulltest.NewPartner(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			pulltest.CursorPage(w, pulltest.Items("a", 0, 1), "x y&z")
			return
		}
		pulltest.CursorPage(w, nil, "")
	})
	cfg := testConfig("p", srv.URL)
	cfg.FirstURL = srv.URL + "/items?since=2026-01-01"
	clk := pulltest.NewClock()
	p, _ := newTestPoller(t, cfg, pulltest.NewRecorder(), &pulltest.Store[CursorRecord]{}, clk)
	stop := pulltest.Run(t, p)
	eventually(t, "caught up", func() bool { return clk.Parked() > 0 })
	stop()
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].URL.RawQuery != "since=2026-01-01" || reqs[1].URL.Query().Get("cursor") != "x y&z" {
		t.Errorf("requests %v", reqs)
	}
}
