package tlsfiles_test

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

// files is a directory with a server certificate, its key and a client CA.
type files struct {
	dir                string
	cert, key, ca      string
	serverCA, clientCA *tlstest.CA
	server             *tlstest.Leaf // in cert and key at first
}

func newFiles(t testing.TB) *files {
	t.Helper()
	dir := t.TempDir()
	f := &files{dir: dir, cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), ca: filepath.Join(dir, "clients.pem"),
		serverCA: tlstest.NewCA(t, "server CA"), clientCA: tlstest.NewCA(t, "client CA")}
	f.server = f.serverCA.Server(t)
	f.server.Write(t, f.cert, f.key)
	tlstest.WriteFile(t, f.ca, f.clientCA.PEM)
	return f
}

func (f *files) config(auth tlsfiles.ClientAuth) tlsfiles.ServerConfig {
	c := tlsfiles.ServerConfig{CertFile: f.cert, KeyFile: f.key, ClientAuth: auth}
	if auth != tlsfiles.ClientAuthNone {
		c.ClientCAFile = f.ca
	}
	return c
}

func TestValidate(t *testing.T) {
	f := newFiles(t)
	other := f.serverCA.Server(t)
	otherKey := filepath.Join(f.dir, "other.key")
	tlstest.WriteFile(t, otherKey, other.KeyPEM)
	garbage := filepath.Join(f.dir, "garbage.pem")
	tlstest.WriteFile(t, garbage, []byte("not PEM at all\n"))
	truncated := filepath.Join(f.dir, "truncated.pem")
	pemText, _ := os.ReadFile(f.cert)
	tlstest.WriteFile(t, truncated, pemText[:len(pemText)/2])
	keyAsCert := filepath.Join(f.dir, "key-as-cert.pem")
	tlstest.WriteFile(t, keyAsCert, other.KeyPEM)

	for _, ok := range []tlsfiles.ServerConfig{
		{},
		tlsfiles.NewDefaultServerConfig(),
		f.config(tlsfiles.ClientAuthNone),
		f.config(tlsfiles.ClientAuthRequest),
		f.config(tlsfiles.ClientAuthRequire),
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		name, field string
		edit        func(*tlsfiles.ServerConfig)
	}{
		{"unknown client_auth", "client_auth", func(c *tlsfiles.ServerConfig) { c.ClientAuth = "always" }},
		{"key without cert", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile = "" }},
		{"client CA without TLS", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile, c.KeyFile = "", "" }},
		{"client auth without TLS", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile, c.KeyFile, c.ClientCAFile = "", "", "" }},
		{"cert without key", "key_file", func(c *tlsfiles.ServerConfig) { c.KeyFile = "" }},
		{"require without CA", "client_ca_file", func(c *tlsfiles.ServerConfig) { c.ClientCAFile = "" }},
		{"CA but no client auth", "client_auth", func(c *tlsfiles.ServerConfig) { c.ClientAuth = tlsfiles.ClientAuthNone }},
		{"cert missing", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile = filepath.Join(f.dir, "absent") }},
		{"cert not PEM", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile = garbage }},
		{"cert truncated", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile = truncated }},
		{"cert file holds a key", "cert_file", func(c *tlsfiles.ServerConfig) { c.CertFile = keyAsCert }},
		{"key missing", "key_file", func(c *tlsfiles.ServerConfig) { c.KeyFile = filepath.Join(f.dir, "absent") }},
		{"key of another certificate", "key_file", func(c *tlsfiles.ServerConfig) { c.KeyFile = otherKey }},
		{"key not PEM", "key_file", func(c *tlsfiles.ServerConfig) { c.KeyFile = garbage }},
		{"client CA not PEM", "client_ca_file", func(c *tlsfiles.ServerConfig) { c.ClientCAFile = garbage }},
		{"client CA missing", "client_ca_file", func(c *tlsfiles.ServerConfig) { c.ClientCAFile = filepath.Join(f.dir, "absent") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.config(tlsfiles.ClientAuthRequire)
			tc.edit(&c)
			err := c.Validate()
			var ce *tlsfiles.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Validate = %v, want an error on %s", err, tc.field)
			}
			if _, err := tlsfiles.NewReloader(c, "test"); err == nil {
				t.Error("NewReloader took a config Validate refuses")
			}
		})
	}
}

// server accepts TLS connections with cfg on loopback. Each accepted
// connection that completes its handshake is answered with one byte and
// its state is sent on states.
type server struct {
	addr   string
	states chan tls.ConnectionState
}

func serve(t *testing.T, cfg *tls.Config) *server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: lis.Addr().String(), states: make(chan tls.ConnectionState, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				tc := tls.Server(c, cfg)
				_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				select {
				case s.states <- tc.ConnectionState():
				default:
				}
				_, _ = tc.Write([]byte{1})
			}()
		}
	}()
	return s
}

// state is the server's side of the connection last dialled.
func (s *server) state(t *testing.T) tls.ConnectionState {
	t.Helper()
	select {
	case st := <-s.states:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("the server saw no handshake")
		return tls.ConnectionState{}
	}
}

// dial connects, presenting client when it is not nil, and reads the
// server's byte: a refusal of the client's certificate shows there even
// under TLS 1.3, where the client's handshake ends first.
func (s *server) dial(t *testing.T, ca *tlstest.CA, client *tlstest.Leaf) (tls.ConnectionState, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	if client != nil {
		// Sent even when the server names other CAs, so that the server's
		// verification is what is tested.
		cert := client.TLS(t)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", s.addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		return tls.ConnectionState{}, err
	}
	return c.ConnectionState(), nil
}

func TestClientAuth(t *testing.T) {
	f := newFiles(t)
	stranger := tlstest.NewCA(t, "unknown CA").Client(t, tlstest.Identity{CommonName: "stranger"})
	client := f.clientCA.Client(t, tlstest.Identity{CommonName: "checkout"})
	for _, tc := range []struct {
		auth                           tlsfiles.ClientAuth
		without, with, strangerRefused bool
	}{
		{tlsfiles.ClientAuthNone, true, true, false},
		{tlsfiles.ClientAuthRequest, true, true, true},
		{tlsfiles.ClientAuthRequire, false, true, true},
	} {
		t.Run(string(tc.auth), func(t *testing.T) {
			r, err := tlsfiles.NewReloader(f.config(tc.auth), "test", tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			s := serve(t, r.Config())
			_, err = s.dial(t, f.serverCA, nil)
			if (err == nil) != tc.without {
				t.Errorf("without a client certificate: err %v, want accepted %v", err, tc.without)
			}
			if err == nil {
				if st := s.state(t); len(st.VerifiedChains) != 0 || st.Version < tls.VersionTLS12 {
					t.Errorf("version %x, %d verified chains without a certificate", st.Version, len(st.VerifiedChains))
				}
			}
			if _, err := s.dial(t, f.serverCA, client); err != nil {
				t.Fatalf("with a client certificate: %v", err)
			}
			st := s.state(t)
			wantChains := tc.auth != tlsfiles.ClientAuthNone
			if (len(st.VerifiedChains) > 0) != wantChains {
				t.Errorf("%d verified chains, want some: %v", len(st.VerifiedChains), wantChains)
			}
			if _, err := s.dial(t, f.serverCA, stranger); (err != nil) != tc.strangerRefused {
				t.Errorf("certificate of an unknown CA: err %v, want refused %v", err, tc.strangerRefused)
			}
		})
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func reloads(t *testing.T, reg prometheus.Gatherer, listener, result string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != "sluice_tls_reloads_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["listener"] == listener && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no sluice_tls_reloads_total{listener=%q,result=%q}", listener, result)
	return 0
}

// TestRotation: replaced files serve new connections after the next
// check; a broken replacement keeps the previous certificate and counts
// one error; the client CA is reloaded too.
func TestRotation(t *testing.T) {
	f := newFiles(t)
	clk := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	r, err := tlsfiles.NewReloader(f.config(tlsfiles.ClientAuthRequire), "grpc",
		tlsfiles.WithClock(clk.Now), tlsfiles.WithRegisterer(reg), tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, r.Config())
	client := f.clientCA.Client(t, tlstest.Identity{CommonName: "checkout"})
	serial := func() string {
		t.Helper()
		st, err := s.dial(t, f.serverCA, client)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		s.state(t)
		return st.PeerCertificates[0].SerialNumber.String()
	}
	first, _ := os.ReadFile(f.cert)
	before := serial()

	next := f.serverCA.Server(t)
	next.Write(t, f.cert, f.key)
	if got := serial(); got != before {
		t.Fatalf("reloaded within the second: serial %s, want %s still", got, before)
	}
	clk.Advance(time.Second)
	if got := serial(); got != next.Cert.SerialNumber.String() {
		t.Fatalf("after rotation: serial %s, want the new %s", got, next.Cert.SerialNumber)
	}
	if n := reloads(t, reg, "grpc", "ok"); n != 1 {
		t.Errorf("ok reloads %v, want 1", n)
	}

	// A certificate whose key has not arrived yet: kept the old pair.
	third := f.serverCA.Server(t)
	tlstest.WriteFile(t, f.cert, third.CertPEM)
	clk.Advance(time.Second)
	if got := serial(); got != next.Cert.SerialNumber.String() {
		t.Fatalf("after a mismatched key: serial %s, want the previous %s", got, next.Cert.SerialNumber)
	}
	clk.Advance(time.Second)
	serial()
	if n := reloads(t, reg, "grpc", "error"); n != 1 {
		t.Errorf("error reloads %v, want 1 (once per broken state)", n)
	}
	tlstest.WriteFile(t, f.key, third.KeyPEM)
	clk.Advance(time.Second)
	if got := serial(); got != third.Cert.SerialNumber.String() {
		t.Fatalf("after the key arrived: serial %s, want %s", got, third.Cert.SerialNumber)
	}

	// A half-written certificate file.
	tlstest.WriteFile(t, f.cert, first[:len(first)/2])
	clk.Advance(time.Second)
	if got := serial(); got != third.Cert.SerialNumber.String() {
		t.Fatalf("after a truncated file: serial %s, want %s", got, third.Cert.SerialNumber)
	}
	if n := reloads(t, reg, "grpc", "error"); n != 2 {
		t.Errorf("error reloads %v, want 2", n)
	}
	third.Write(t, f.cert, f.key)
	clk.Advance(time.Second)
	if got := serial(); got != third.Cert.SerialNumber.String() {
		t.Fatalf("after the repair: serial %s, want %s", got, third.Cert.SerialNumber)
	}

	// A new client CA: the old one's clients are refused, the new one's let in.
	newCA := tlstest.NewCA(t, "next client CA")
	tlstest.WriteFile(t, f.ca, newCA.PEM)
	clk.Advance(time.Second)
	if _, err := s.dial(t, f.serverCA, client); err == nil {
		t.Error("a client of the replaced CA was let in")
	}
	if _, err := s.dial(t, f.serverCA, newCA.Client(t, tlstest.Identity{CommonName: "checkout"})); err != nil {
		t.Errorf("a client of the new CA: %v", err)
	}
	if n := reloads(t, reg, "grpc", "ok"); n != 4 {
		t.Errorf("ok reloads %v, want 4", n)
	}
}

func expiry(t *testing.T, reg prometheus.Gatherer, listener string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != "sluice_tls_certificate_expiry_timestamp_seconds" {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "listener" && l.GetValue() == listener {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sluice_tls_certificate_expiry_timestamp_seconds{listener=%q}", listener)
	return 0
}

// TestExpiryGauge: the expiry gauge is the NotAfter of the certificate
// served: the first one's, a rotated one's, and still the rotated one's
// after a broken replacement.
func TestExpiryGauge(t *testing.T) {
	f := newFiles(t)
	clk := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	r, err := tlsfiles.NewReloader(f.config(tlsfiles.ClientAuthNone), "http",
		tlsfiles.WithClock(clk.Now), tlsfiles.WithRegisterer(reg), tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := expiry(t, reg, "http"), float64(f.server.Cert.NotAfter.Unix()); got != want {
		t.Fatalf("after the first load: expiry %v, want %v", got, want)
	}
	s := serve(t, r.Config())
	handshake := func() {
		t.Helper()
		if _, err := s.dial(t, f.serverCA, nil); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		s.state(t)
	}
	next := f.serverCA.ServerUntil(t, f.server.Cert.NotAfter.Add(10*24*time.Hour))
	next.Write(t, f.cert, f.key)
	clk.Advance(time.Second)
	handshake()
	if got, want := expiry(t, reg, "http"), float64(next.Cert.NotAfter.Unix()); got != want {
		t.Fatalf("after rotation: expiry %v, want %v", got, want)
	}
	tlstest.WriteFile(t, f.cert, []byte("not PEM at all\n"))
	clk.Advance(time.Second)
	handshake()
	if got, want := expiry(t, reg, "http"), float64(next.Cert.NotAfter.Unix()); got != want {
		t.Fatalf("after a broken replacement: expiry %v, want the served %v", got, want)
	}
}

// TestSharedRegisterer: listeners on one Registerer count in one family.
func TestSharedRegisterer(t *testing.T) {
	f := newFiles(t)
	reg := prometheus.NewRegistry()
	for _, name := range []string{"grpc", "http"} {
		if _, err := tlsfiles.NewReloader(f.config(tlsfiles.ClientAuthNone), name, tlsfiles.WithRegisterer(reg),
			tlsfiles.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"grpc", "http"} {
		if n := reloads(t, reg, name, "error"); n != 0 {
			t.Errorf("%s: %v errors", name, n)
		}
		if got := expiry(t, reg, name); got != float64(f.server.Cert.NotAfter.Unix()) {
			t.Errorf("%s: expiry %v, want %v", name, got, f.server.Cert.NotAfter.Unix())
		}
	}
}

// TestNextProtos: an HTTP listener's protocols are offered on every
// handshake, h2 first.
func TestNextProtos(t *testing.T) {
	f := newFiles(t)
	r, err := tlsfiles.NewReloader(f.config(tlsfiles.ClientAuthNone), "http", tlsfiles.WithNextProtos("h2", "http/1.1"),
		tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, r.Config())
	c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: f.serverCA.Pool(), ServerName: "localhost", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Errorf("negotiated %q, want h2", p)
	}
}

// TestConcurrentHandshakes: handshakes racing with rotations each get a
// whole certificate, one of those written.
func TestConcurrentHandshakes(t *testing.T) {
	f := newFiles(t)
	clk := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	r, err := tlsfiles.NewReloader(f.config(tlsfiles.ClientAuthNone), "test", tlsfiles.WithClock(clk.Now),
		tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, r.Config())
	var known sync.Map
	known.Store(f.server.Cert.SerialNumber.String(), true)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				cfg := &tls.Config{RootCAs: f.serverCA.Pool(), ServerName: "localhost"}
				c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.addr, cfg)
				if err != nil {
					errs <- err
					return
				}
				serial := c.ConnectionState().PeerCertificates[0].SerialNumber.String()
				c.Close()
				if _, ok := known.Load(serial); !ok {
					errs <- errors.New("served serial " + serial + " was never written")
					return
				}
			}
		}()
	}
	for range 5 {
		next := f.serverCA.Server(t)
		known.Store(next.Cert.SerialNumber.String(), true)
		next.Write(t, f.cert, f.key)
		clk.Advance(time.Second)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestListenerConfig(t *testing.T) {
	tlsOn := tlsfiles.ListenerConfig{ServerConfig: tlsfiles.ServerConfig{CertFile: "/nonexistent.pem", KeyFile: "/nonexistent-key.pem"}}
	for _, c := range []struct {
		l                     tlsfiles.ListenerConfig
		tlsPath, insecurePath string
		field, reason         string
	}{
		{tlsfiles.ListenerConfig{}, "grpc_tls", "grpc_tls.insecure", "", ""},
		{tlsfiles.ListenerConfig{Insecure: true}, "grpc_tls", "grpc_tls.insecure", "", ""},
		{tlsOn, "grpc_tls", "grpc_tls.insecure", "grpc_tls.cert_file", ""},
		{tlsfiles.ListenerConfig{ServerConfig: tlsOn.ServerConfig, Insecure: true}, "grpc_tls", "grpc_tls.insecure", "grpc_tls.insecure", "when cert_file is set"},
		{tlsfiles.ListenerConfig{ServerConfig: tlsOn.ServerConfig, Insecure: true}, "tls", "insecure", "insecure", "when tls.cert_file is set"},
		{tlsfiles.ListenerConfig{ServerConfig: tlsfiles.ServerConfig{ClientAuth: "sometimes"}}, "tls", "insecure", "tls.client_auth", ""},
		{tlsfiles.ListenerConfig{ServerConfig: tlsfiles.ServerConfig{ClientAuth: "sometimes"}}, "", "insecure", "client_auth", ""},
	} {
		err := c.l.ValidateAt(c.tlsPath, c.insecurePath)
		var ce *tlsfiles.ConfigError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.l, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.reason)):
			t.Errorf("%+v at %s: %v, want an error naming %s (%s)", c.l, c.tlsPath, err, c.field, c.reason)
		}
	}
	for _, c := range []struct {
		l    tlsfiles.ListenerConfig
		addr string
		want bool
	}{
		{tlsfiles.ListenerConfig{}, "127.0.0.1:9090", false},
		{tlsfiles.ListenerConfig{}, "", false},
		{tlsfiles.ListenerConfig{}, ":9090", true},
		{tlsfiles.ListenerConfig{Insecure: true}, "0.0.0.0:9090", true},
		{tlsOn, "0.0.0.0:9090", false},
	} {
		if got := c.l.PlaintextBeyondLoopback(c.addr); got != c.want {
			t.Errorf("%+v on %q: %v, want %v", c.l, c.addr, got, c.want)
		}
	}
}

func TestClientConfigLoad(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "client-test-ca")
	caFile, mixed := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "mixed.pem")
	tlstest.WriteFile(t, caFile, ca.PEM)
	leaf := ca.Client(t, tlstest.Identity{CommonName: "c"})
	tlstest.WriteFile(t, mixed, append(append([]byte{}, ca.PEM...), leaf.KeyPEM...))
	leaf.Write(t, filepath.Join(dir, "c.pem"), filepath.Join(dir, "c-key.pem"))

	if cfg, err := (tlsfiles.ClientConfig{}).Load(); cfg != nil || err != nil {
		t.Fatalf("off: %v, %v", cfg, err)
	}
	cfg, err := tlsfiles.ClientConfig{CAFile: caFile, CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "c-key.pem"), ServerName: "kafka"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "kafka" {
		t.Fatalf("loaded: %+v", cfg)
	}
	// A key block among the CAs is refused, not skipped.
	_, err = tlsfiles.ClientConfig{CAFile: mixed}.Load()
	var ce *tlsfiles.ConfigError
	if !errors.As(err, &ce) || ce.Field != "ca_file" {
		t.Fatalf("a CA file with a key in it: %v", err)
	}
}
