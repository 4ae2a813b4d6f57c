package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHTTPResponseClasses(t *testing.T) {
	clock := newTestClock()
	for _, tc := range []struct {
		status     int
		retryAfter string
		want       Class // 0: success
		wantAfter  time.Duration
	}{
		{status: 200},
		{status: 201},
		{status: 204},
		{status: 400, want: Permanent},
		{status: 401, want: Permanent},
		{status: 404, want: Permanent},
		{status: 422, want: Permanent},
		{status: 400, retryAfter: "5", want: Permanent},
		{status: 408, want: Transient},
		{status: 429, want: Transient},
		{status: 500, want: Transient},
		{status: 502, want: Transient},
		{status: 503, want: Transient},
		{status: 504, want: Transient},
		{status: 429, retryAfter: "7", want: Transient, wantAfter: 7 * time.Second},
		{status: 503, retryAfter: " 120 ", want: Transient, wantAfter: 2 * time.Minute},
		{status: 503, retryAfter: clock.Now().Add(90 * time.Second).Format(http.TimeFormat), want: Transient, wantAfter: 90 * time.Second},
		{status: 503, retryAfter: clock.Now().Add(-time.Hour).Format(http.TimeFormat), want: Transient},
		{status: 429, retryAfter: "soon", want: Transient},
		{status: 429, retryAfter: "-3", want: Transient},
		{status: 429, retryAfter: "99999999999999999999", want: Transient, wantAfter: 10 * time.Minute},
		{status: 302, want: Transient},
	} {
		name := http.StatusText(tc.status)
		if tc.retryAfter != "" {
			name += "/Retry-After " + tc.retryAfter
		}
		t.Run(name, func(t *testing.T) {
			body := strings.Repeat("x", 10_000)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				if tc.status != http.StatusNoContent {
					io.WriteString(w, "refused: "+body)
				}
			}))
			defer srv.Close()
			h := openTestHTTP(t, srv.URL, clock, nil)
			err := writeErr(context.Background(), h, testEvents(0, 1))
			wantClass(t, err, tc.want)
			if tc.want == 0 {
				return
			}
			if _, after := Classify(err); after != tc.wantAfter {
				t.Errorf("RetryAfter = %v, want %v", after, tc.wantAfter)
			}
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *StatusError", err)
			}
			if se.StatusCode != tc.status || se.EventID != "evt-0000" {
				t.Errorf("StatusError = %d %q, want %d evt-0000", se.StatusCode, se.EventID, tc.status)
			}
			if !strings.HasPrefix(se.Body, "refused: xxx") || len(se.Body) > errPrefixLen+len("…") {
				t.Errorf("StatusError.Body = %d bytes starting %.20q, want a bounded prefix of the body", len(se.Body), se.Body)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("status %d", tc.status)) {
				t.Errorf("error %q does not name the status", err)
			}
		})
	}
}

func TestHTTPOrderAndStop(t *testing.T) {
	ctx := context.Background()
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		keys = append(keys, key)
		mu.Unlock()
		if key == IdempotencyKey(testEvent(13).Source, testEvent(13).ID) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	h := openTestHTTP(t, srv.URL, newTestClock(), nil)

	batch := testEvents(0, 10)
	wantClass(t, writeErr(ctx, h, batch), 0)
	// The batch stops at the first failure: evt-0013 is tried, later events are not.
	wantClass(t, writeErr(ctx, h, testEvents(10, 10)), Transient)

	mu.Lock()
	defer mu.Unlock()
	var want []string
	for _, e := range testEvents(0, 14) {
		want = append(want, IdempotencyKey(e.Source, e.ID))
	}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("POST order = %v, want %v", keys, want)
	}
}

func TestHTTPNetworkErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("closed server", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		h := openTestHTTP(t, url, newTestClock(), nil)
		wantClass(t, writeErr(ctx, h, testEvents(0, 1)), Transient)
	})
	t.Run("request timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		h := openTestHTTP(t, srv.URL, newTestClock(), func(c *HTTPConfig) { c.RequestTimeout = 50 * time.Millisecond })
		err := writeErr(ctx, h, testEvents(0, 1))
		wantClass(t, err, Transient)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline", err)
		}
	})
	t.Run("connection reset mid-response", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		h := openTestHTTP(t, srv.URL, newTestClock(), nil)
		wantClass(t, writeErr(ctx, h, testEvents(0, 1)), Transient)
	})
}

// TestHTTPReusesConnections shows that response bodies are read, so that one
// connection carries a whole batch.
func TestHTTPReusesConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, strings.Repeat(`{"ok":true}`, 500))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	h := openTestHTTP(t, srv.URL, newTestClock(), nil)
	wantClass(t, writeErr(context.Background(), h, testEvents(0, 20)), 0)
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 POSTs used %d connections, want 1", n)
	}
}

func TestHTTPHeaders(t *testing.T) {
	rc, srv := newReceiverServer(t)
	env := map[string]string{"SINK_AUTH": "Bearer s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := DefaultConfig().HTTP
	cfg.URL = srv.URL
	cfg.Headers = map[string]string{"X-Tenant": "acme"}
	cfg.HeadersFromEnv = map[string]string{"Authorization": "SINK_AUTH"}
	h, err := OpenHTTP(cfg, WithLookupEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	wantClass(t, writeErr(context.Background(), h, testEvents(0, 2)), 0)
	rc.mu.Lock()
	got := rc.header
	rc.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("receiver saw %d requests, want 2", len(got))
	}
	for i, hd := range got {
		e := testEvent(i)
		if hd.Get("Authorization") != "Bearer s3cret" || hd.Get("X-Tenant") != "acme" ||
			hd.Get("Idempotency-Key") != e.Source+"/"+e.ID || hd.Get("Content-Type") != "application/json" ||
			hd.Get("Sluice-Payload-Fingerprint") != e.PayloadFingerprint {
			t.Errorf("request %d headers = %v", i, hd)
		}
	}

	cfg.HeadersFromEnv = map[string]string{"Authorization": "SINK_MISSING"}
	_, err = OpenHTTP(cfg, WithLookupEnv(lookup))
	if err == nil || !strings.Contains(err.Error(), "http.headers_from_env[Authorization]") || !strings.Contains(err.Error(), "SINK_MISSING") {
		t.Fatalf("OpenHTTP with unset variable: err = %v, want one naming the field and the variable", err)
	}
}

func TestHTTPRedirects(t *testing.T) {
	rc, target := newReceiverServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusPermanentRedirect)
	}))
	defer srv.Close()
	h := openTestHTTP(t, srv.URL, newTestClock(), nil)
	events := testEvents(0, 2)
	wantClass(t, writeErr(context.Background(), h, events), 0)
	for _, e := range events {
		row, err := rc.Get(context.Background(), e.Source, e.ID)
		if err != nil {
			t.Fatalf("after 308: %v", err)
		}
		checkRow(t, stores{precision: time.Nanosecond}, e, row, time.Time{})
	}
}

// TestHTTPIdempotencyKey: the key names the source and the id, and two
// identities never share one, however their parts are cut.
func TestHTTPIdempotencyKey(t *testing.T) {
	for _, tc := range []struct{ source, id, want string }{
		{"shop", "order-123", "shop/order-123"},
		{"shop a", "order/1", "shop%20a/order%2F1"},
		{"a/b", "c", "a%2Fb/c"},
		{"a", "b/c", "a/b%2Fc"},
		{"a%2Fb", "c", "a%252Fb/c"},
		{"ü", "100%", "%C3%BC/100%25"},
	} {
		if got := IdempotencyKey(tc.source, tc.id); got != tc.want {
			t.Errorf("IdempotencyKey(%q, %q) = %q, want %q", tc.source, tc.id, got, tc.want)
		}
	}
	// Every identity of these parts has a key of its own.
	parts := []string{"", "a", "b", "a/b", "b/", "/b", "a%2Fb", "%", "/"}
	seen := map[string][2]string{}
	for _, source := range parts {
		for _, id := range parts {
			k := IdempotencyKey(source, id)
			if prev, dup := seen[k]; dup {
				t.Fatalf("IdempotencyKey(%q, %q) = IdempotencyKey(%q, %q) = %q", source, id, prev[0], prev[1], k)
			}
			seen[k] = [2]string{source, id}
		}
	}
}

// TestHTTPConflicts: a 2xx answer echoing another payload fingerprint than
// the one sent is a Conflict; no echo, or the same one, is none. Other
// statuses are classified as they always are, whatever they carry.
func TestHTTPConflicts(t *testing.T) {
	held := Fingerprint([]byte("held"))
	for _, tc := range []struct {
		name   string
		status int
		echo   string // "": no header; "sent": the fingerprint sent
		want   []Conflict
		class  Class
	}{
		{name: "no echo", status: http.StatusOK},
		{name: "same fingerprint", status: http.StatusOK, echo: "sent"},
		{name: "created, same fingerprint", status: http.StatusCreated, echo: "sent"},
		{name: "other fingerprint", status: http.StatusOK, echo: held, want: []Conflict{{1, held}}},
		{name: "accepted, other fingerprint", status: http.StatusAccepted, echo: held, want: []Conflict{{1, held}}},
		{name: "other fingerprint with spaces", status: http.StatusOK, echo: " " + held + " ", want: []Conflict{{1, held}}},
		{name: "conflict status", status: http.StatusConflict, echo: held, class: Permanent},
		{name: "unprocessable", status: http.StatusUnprocessableEntity, echo: held, class: Permanent},
		{name: "unavailable", status: http.StatusServiceUnavailable, echo: held, class: Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := testEvents(0, 3)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Only the second event meets what the test answers.
				status, echo := http.StatusCreated, "sent"
				if r.Header.Get(HeaderIdempotencyKey) == IdempotencyKey(batch[1].Source, batch[1].ID) {
					status, echo = tc.status, tc.echo
				}
				if echo == "sent" {
					echo = r.Header.Get(HeaderPayloadFingerprint)
				}
				if echo != "" {
					w.Header().Set(HeaderPayloadFingerprint, echo)
				}
				w.WriteHeader(status)
			}))
			defer srv.Close()
			h := openTestHTTP(t, srv.URL, newTestClock(), nil)
			got, err := h.Write(context.Background(), batch)
			wantClass(t, err, tc.class)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("conflicts = %v, want %v", got, tc.want)
			}
		})
	}
}
