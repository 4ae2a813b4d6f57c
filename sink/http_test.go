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

	"github.com/sluicehq/sluice/internal/outbound"
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
	t.Run("body stalls after the status", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so the server notices the client leave
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "accepted, and then")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		h := openTestHTTP(t, srv.URL, newTestClock(), func(c *HTTPConfig) { c.RequestTimeout = 50 * time.Millisecond })
		// The status is the answer; draining the rest ends at the deadline.
		wantClass(t, writeErr(ctx, h, testEvents(0, 1)), 0)
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

// TestHTTPKeepsConcurrentConnections: with the default pool, the
// connections of many concurrent writes (the consumer's, one key each)
// all stay open for the next ones, rather than all but a few being closed
// and dialed again for every POST.
func TestHTTPKeepsConcurrentConnections(t *testing.T) {
	const writers = 256
	var (
		conns   atomic.Int32
		mu      sync.Mutex
		arrived int
		gate    = make(chan struct{})
	)
	// Each request waits until all the round's writers have one open, so
	// that the round needs writers connections at once.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		g := gate
		if arrived == writers {
			close(gate)
			arrived, gate = 0, make(chan struct{})
		}
		mu.Unlock()
		<-g
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	h := openTestHTTP(t, srv.URL, newTestClock(), nil)
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				if err := writeErr(context.Background(), h, testEvents(round*writers+i, 1)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n != writers {
		t.Fatalf("3 rounds of %d concurrent POSTs used %d connections, want %d", writers, n, writers)
	}
}

func TestHTTPHeaders(t *testing.T) {
	rc, srv := newReceiverServer(t)
	env := map[string]string{"SINK_AUTH": "Bearer s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := NewDefaultConfig().HTTP
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

// TestHTTPRedirects: 307 and 308 on the URL's origin are followed and
// keep the POST and its body; a redirect to another origin, or from https
// to http, is refused before anything is sent there (the configured
// Authorization header included) and is Transient: the events are fine,
// the endpoint is not.
func TestHTTPRedirects(t *testing.T) {
	ctx := context.Background()
	t.Run("same origin", func(t *testing.T) {
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			rc := newReceiver()
			mux := http.NewServeMux()
			mux.Handle("/receive", rc)
			mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/receive", status)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			h := openTestHTTP(t, srv.URL+"/events", newTestClock(), nil)
			events := testEvents(0, 2)
			wantClass(t, writeErr(ctx, h, events), 0)
			for _, e := range events {
				row, err := rc.Get(ctx, e.Source, e.ID)
				if err != nil {
					t.Fatalf("after %d: %v", status, err)
				}
				checkRow(t, stores{precision: time.Nanosecond}, e, row, time.Time{})
			}
		}
	})
	env := func(string) (string, bool) { return "Bearer s3cret", true }
	for _, tc := range []struct {
		name   string
		status int
		tls    bool // the sink's URL is https, the target http on the same host
	}{
		{"307 to another origin", http.StatusTemporaryRedirect, false},
		{"308 to another origin", http.StatusPermanentRedirect, false},
		{"302 to another origin", http.StatusFound, false},
		{"308 from https to http", http.StatusPermanentRedirect, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var elsewhere atomic.Int32
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				newReceiver().ServeHTTP(w, r)
			}))
			defer target.Close()
			redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/receive", tc.status)
			})
			cfg := NewDefaultConfig().HTTP
			cfg.HeadersFromEnv = map[string]string{"Authorization": "SINK_AUTH"}
			opts := []Option{WithLookupEnv(env), WithClock(newTestClock().Now)}
			if tc.tls {
				srv := httptest.NewTLSServer(redirect)
				defer srv.Close()
				cfg.URL = srv.URL + "/events"
				opts = append(opts, WithHTTPClient(srv.Client())) // a client of the caller's is held to the origin too
			} else {
				srv := httptest.NewServer(redirect)
				defer srv.Close()
				cfg.URL = srv.URL + "/events"
			}
			h, err := OpenHTTP(cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			err = writeErr(ctx, h, testEvents(0, 2))
			wantClass(t, err, Transient)
			if !errors.Is(err, outbound.ErrOffOrigin) {
				t.Errorf("err = %v, want the refused redirect", err)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the other origin got %d requests", n)
			}
		})
	}
}

// TestHTTPErrorsRedactURL: a failed request's error names the URL with
// its query values redacted.
func TestHTTPErrorsRedactURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	h := openTestHTTP(t, base+"/events?token=s3cret&tenant=acme", newTestClock(), nil)
	err := writeErr(context.Background(), h, testEvents(0, 1))
	wantClass(t, err, Transient)
	if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "acme") || !strings.Contains(msg, "token=REDACTED&tenant=REDACTED") {
		t.Errorf("error %q", msg)
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
