package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

var quiet = slog.New(slog.DiscardHandler)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string // "" when valid
	}{
		{Config{}, ""},
		{Config{Addr: "127.0.0.1:9100"}, ""},
		{Config{Addr: "0.0.0.0:9100"}, "addr"},
		{Config{Addr: ":9100"}, "addr"},
		{Config{Addr: "0.0.0.0:9100", Insecure: true}, ""},
		{Config{Addr: "0.0.0.0:9100", TLS: tlsfiles.ServerConfig{CertFile: "/nonexistent.pem", KeyFile: "/nonexistent-key.pem"}}, "tls.cert_file"},
		{Config{Addr: "127.0.0.1:9100", Insecure: true, TLS: tlsfiles.ServerConfig{CertFile: "a.pem", KeyFile: "b.pem"}}, "insecure"},
		{Config{Addr: "127.0.0.1:0", Pprof: true}, ""},
		{Config{Addr: "localhost:6060", Pprof: true}, ""},
		{Config{Addr: "[::1]:6060", Pprof: true}, ""},
		{Config{Addr: "nonsense"}, "addr"},
		{Config{Addr: "0.0.0.0:9100", Pprof: true, Insecure: true}, "pprof"},
		{Config{Addr: "10.1.2.3:9100", Pprof: true}, "pprof"},
		{Config{Addr: "example.com:9100", Pprof: true}, "pprof"},
	} {
		err := c.cfg.Validate()
		var ce *ConfigError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
	if got := (Config{}).WithDefaultAddr(DefaultConsumerAddr).Addr; got != DefaultConsumerAddr {
		t.Errorf("empty addr took %q", got)
	}
	if got := (Config{Addr: "127.0.0.1:1"}).WithDefaultAddr(DefaultConsumerAddr).Addr; got != "127.0.0.1:1" {
		t.Errorf("set addr replaced by %q", got)
	}
	if _, err := New(Config{}, prometheus.NewRegistry()); err == nil {
		t.Error("New without an address")
	}
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServer: /metrics serves the gatherer, /healthz is 200, /readyz
// follows the readiness, profiles only when asked for, and Shutdown stops
// the listener.
func TestServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "admin_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	var notReady atomic.Pointer[error]
	ready := func() error {
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, pprof := range []bool{false, true} {
		s, err := New(Config{Addr: "127.0.0.1:0", Pprof: pprof}, reg, WithReadiness(ready), WithLogger(quiet),
			WithRoutes(func(mux *http.ServeMux) {
				mux.HandleFunc("GET /admin/own", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("own route")) })
			}))
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		base := "http://" + s.Addr()
		if code, body := get(t, client, base+"/metrics"); code != 200 || !strings.Contains(body, "admin_test_total 3") {
			t.Errorf("/metrics %d %q", code, body)
		}
		if code, _ := get(t, client, base+"/healthz"); code != 200 {
			t.Errorf("/healthz %d", code)
		}
		if code, body := get(t, client, base+"/admin/own"); code != 200 || body != "own route" {
			t.Errorf("a route added WithRoutes: %d %q", code, body)
		}
		if code, _ := get(t, client, base+"/readyz"); code != 200 {
			t.Errorf("/readyz ready: %d", code)
		}
		why := errors.New("kafka unreachable")
		notReady.Store(&why)
		if code, body := get(t, client, base+"/readyz"); code != 503 || !strings.Contains(body, "kafka unreachable") {
			t.Errorf("/readyz not ready: %d %q", code, body)
		}
		notReady.Store(nil)
		want := http.StatusNotFound
		if pprof {
			want = http.StatusOK
		}
		if code, _ := get(t, client, base+"/debug/pprof/heap?debug=1"); code != want {
			t.Errorf("pprof %v: heap profile %d, want %d", pprof, code, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		cancel()
		if _, err := client.Get(base + "/healthz"); err == nil {
			t.Error("served after Shutdown")
		}
	}
}

// TestServerTLS: with a tls block, or WithTLS in its place, the listener
// speaks HTTPS only, and a block's certificate is reloaded and counted.
func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "admin-test-ca")
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	inFiles, given := ca.Server(t), ca.Server(t)
	inFiles.Write(t, certFile, keyFile)
	for _, c := range []struct {
		name string
		cfg  Config
		opts []Option
		want *tlstest.Leaf
	}{
		{"config", Config{Addr: "127.0.0.1:0", TLS: tlsfiles.ServerConfig{CertFile: certFile, KeyFile: keyFile}}, nil, inFiles},
		{"WithTLS", Config{Addr: "127.0.0.1:0", TLS: tlsfiles.ServerConfig{CertFile: certFile, KeyFile: keyFile}},
			[]Option{WithTLS(&tls.Config{Certificates: []tls.Certificate{given.TLS(t)}, MinVersion: tls.VersionTLS12})}, given},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s, err := New(c.cfg, reg, append(c.opts, WithLogger(quiet), WithRegisterer(reg))...)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = s.Shutdown(ctx)
			}()
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
			if code, _ := get(t, client, "https://"+s.Addr()+"/healthz"); code != 200 {
				t.Errorf("/healthz over TLS: %d", code)
			}
			if code, _ := get(t, &http.Client{Timeout: 10 * time.Second}, "http://"+s.Addr()+"/healthz"); code == 200 {
				t.Error("plain HTTP served")
			}
			conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: ca.Pool()})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(c.want.Cert.SerialNumber) != 0 {
				t.Errorf("served serial %v, want %v", got, c.want.Cert.SerialNumber)
			}
		})
	}
}

// TestChecker: ErrNotChecked until the first check; then the last answer,
// with OnChange told of each change; Stop cuts off a check in progress and
// waits for the goroutine.
func TestChecker(t *testing.T) {
	var mu sync.Mutex
	answer := errors.New("down")
	block := false
	entered := make(chan struct{}, 1)
	check := func(ctx context.Context) error {
		mu.Lock()
		a, b := answer, block
		mu.Unlock()
		if b {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done() // only Stop ends it: the timeout is long
			return ctx.Err()
		}
		return a
	}
	changes := make(chan error, 16)
	c := NewChecker(check, CheckEvery(time.Millisecond, time.Hour), OnChange(func(err error) { changes <- err }))
	if err := c.Ready(); !errors.Is(err, ErrNotChecked) {
		t.Fatalf("before Start: %v", err)
	}
	c.Start()
	wait := func(what string, want func(error) bool) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case err := <-changes:
				if want(err) {
					return
				}
			case <-deadline:
				t.Fatalf("waited in vain for %s", what)
			}
		}
	}
	wait("the first answer", func(err error) bool { return err != nil && err.Error() == "down" })
	if err := c.Ready(); err == nil || err.Error() != "down" {
		t.Fatalf("Ready %v", err)
	}
	mu.Lock()
	answer = nil
	mu.Unlock()
	wait("ready", func(err error) bool { return err == nil })
	if err := c.Ready(); err != nil {
		t.Fatalf("Ready %v", err)
	}
	mu.Lock()
	block = true
	mu.Unlock()
	<-entered
	c.Stop() // returns only once the blocked check is cut off
	if err := c.Ready(); err != nil {
		t.Errorf("an answer cut off by Stop was kept: %v", err)
	}
	c.Stop()
}

// TestMetricsExemplars: a scraper that asks for OpenMetrics, as Prometheus
// does, gets the latency histograms' exemplars (the trace ids); the text
// format, which has no exemplars, stays the default.
func TestMetricsExemplars(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admin_test_seconds", Help: "A test histogram.", Buckets: []float64{1}})
	reg.MustRegister(h)
	h.(prometheus.ExemplarObserver).ObserveWithExemplar(0.5, prometheus.Labels{"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"})
	s, err := New(Config{Addr: "127.0.0.1:0"}, reg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	client := &http.Client{Timeout: 10 * time.Second}
	scrape := func(accept string) string {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const exemplar = `# {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.5`
	if body := scrape("application/openmetrics-text;version=1.0.0"); !strings.Contains(body, exemplar) {
		t.Errorf("OpenMetrics scrape has no exemplar %q:\n%s", exemplar, body)
	}
	if body := scrape(""); strings.Contains(body, "trace_id") || !strings.Contains(body, "admin_test_seconds_count 1") {
		t.Errorf("text scrape:\n%s", body)
	}
}
