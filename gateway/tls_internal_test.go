package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

// tlsFiles writes a server certificate, its key and a client CA.
func tlsFiles(t *testing.T) (block tlsfiles.ServerConfig, serverCA, clientCA *tlstest.CA) {
	t.Helper()
	dir := t.TempDir()
	serverCA, clientCA = tlstest.NewCA(t, "server CA"), tlstest.NewCA(t, "client CA")
	block = tlsfiles.ServerConfig{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		ClientCAFile: filepath.Join(dir, "ca.pem"), ClientAuth: tlsfiles.ClientAuthRequest}
	serverCA.Server(t).Write(t, block.CertFile, block.KeyFile)
	tlstest.WriteFile(t, block.ClientCAFile, clientCA.PEM)
	return block, serverCA, clientCA
}

func TestTLSConfigValidate(t *testing.T) {
	block, _, _ := tlsFiles(t)
	valid := func() Config {
		c := NewDefaultConfig()
		c.GRPCTLS.ServerConfig = block
		c.Sources = []SourceConfig{
			{Name: "a", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}},
			{Name: "b", ClientCerts: []string{"dns:b.internal", "uri:spiffe://shop/b", "email:ops@Example.com", "cn:b"}, EventTypes: []string{"*"}},
		}
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"grpc_tls.cert_file", func(c *Config) { c.GRPCTLS.CertFile = filepath.Join(t.TempDir(), "absent") }},
		{"grpc_tls.key_file", func(c *Config) { c.GRPCTLS.KeyFile = c.GRPCTLS.ClientCAFile }},
		{"grpc_tls.insecure", func(c *Config) { c.GRPCTLS.Insecure = true }},
		{"http_tls.client_ca_file", func(c *Config) { c.HTTPTLS.ServerConfig = block; c.HTTPTLS.ClientCAFile = "" }},
		{"http_tls.client_auth", func(c *Config) { c.HTTPTLS.ServerConfig = block; c.HTTPTLS.ClientAuth = "sometimes" }},
		{"sources[1].key_hashes", func(c *Config) { c.Sources[1].ClientCerts = nil }},
		{"sources[1].client_certs", func(c *Config) { c.GRPCTLS.ClientAuth, c.GRPCTLS.ClientCAFile = tlsfiles.ClientAuthNone, "" }},
		{"sources[1].client_certs[0]", func(c *Config) { c.Sources[1].ClientCerts[0] = "ip:10.0.0.1" }},
		{"sources[1].client_certs[0]", func(c *Config) { c.Sources[1].ClientCerts[0] = "dns:*.internal" }},
		{"sources[1].client_certs[0]", func(c *Config) { c.Sources[1].ClientCerts[0] = "dns:" }},
		{"sources[1].client_certs[1]", func(c *Config) { c.Sources[1].ClientCerts[1] = "uri:shop/b" }},
		{"sources[1].client_certs[2]", func(c *Config) { c.Sources[1].ClientCerts[2] = "email:ops" }},
		{"sources[1].client_certs[3]", func(c *Config) { c.Sources[1].ClientCerts[3] = "checkout" }},
		{"sources[1].client_certs[3]", func(c *Config) { c.Sources[1].ClientCerts[3] = "subject:checkout" }},
		{"sources[1].client_certs[1]", func(c *Config) { c.Sources[1].ClientCerts[1] = "dns:B.internal" }},
		{"sources[2].client_certs[0]", func(c *Config) {
			// The same name, in another case: one source only.
			c.Sources = append(c.Sources, SourceConfig{Name: "c", ClientCerts: []string{"dns:B.Internal"}, EventTypes: []string{"*"}})
		}},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := valid()
			c.mutate(&cfg)
			err := cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field {
				t.Fatalf("got %v, want an error naming %s", err, c.field)
			}
		})
	}
}

func TestPlaintextExposed(t *testing.T) {
	block, _, _ := tlsFiles(t)
	for _, c := range []struct {
		grpc, http string
		tls        bool
		insecure   bool
		want       string
	}{
		{"127.0.0.1:9090", "[::1]:8080", false, false, ""},
		{"localhost:9090", "127.0.0.2:8080", false, false, ""},
		{":9090", "0.0.0.0:8080", false, false, "grpc_addr,http_addr"},
		{"10.0.0.5:9090", "gateway.internal:8080", false, false, "grpc_addr,http_addr"},
		{":9090", ":8080", true, false, ""},
		{":9090", "127.0.0.1:8080", false, true, ""},
	} {
		cfg := NewDefaultConfig()
		cfg.GRPCAddr, cfg.HTTPAddr = c.grpc, c.http
		if c.tls {
			cfg.GRPCTLS.ServerConfig, cfg.HTTPTLS.ServerConfig = block, block
		}
		cfg.GRPCTLS.Insecure = c.insecure
		if got := strings.Join(cfg.PlaintextExposed(), ","); got != c.want {
			t.Errorf("%s %s tls %v insecure %v: %q, want %q", c.grpc, c.http, c.tls, c.insecure, got, c.want)
		}
	}
}

// peerCtx is a call's context with a TLS peer: verified, the leaf is in
// VerifiedChains; not, only in PeerCertificates.
func peerCtx(leaf *x509.Certificate, verified bool, key string) context.Context {
	state := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	if verified {
		state.VerifiedChains = [][]*x509.Certificate{{leaf}}
	}
	ctx := withPeerTLS(context.Background(), state)
	if key != "" {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(apiKeyMetadata, key))
	}
	return ctx
}

// TestAuthenticateByCertificate: the order of API key and certificate, and
// which certificates count.
func TestAuthenticateByCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "client CA")
	srcs := newSources([]SourceConfig{
		{Name: "keyed", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}},
		{Name: "checkout", ClientCerts: []string{"dns:checkout.internal", "uri:spiffe://shop/checkout"}, EventTypes: []string{"*"}},
		{Name: "ops", ClientCerts: []string{"email:ops@example.com", "cn:ops"}, EventTypes: []string{"*"}},
		{Name: "payments", ClientCerts: []string{"subject:CN=pay-1,O=Shop"}, EventTypes: []string{"*"}},
	}, 0)
	cert := func(id tlstest.Identity) *x509.Certificate { return ca.Client(t, id).Cert }
	checkout := cert(tlstest.Identity{CommonName: "pod-1", DNSNames: []string{"CHECKOUT.internal"}})
	for _, c := range []struct {
		name string
		ctx  context.Context
		want string // source, or a piece of the refusal's message
	}{
		{"key alone", metadata.NewIncomingContext(context.Background(), metadata.Pairs(apiKeyMetadata, "k")), "keyed"},
		{"nothing", context.Background(), "no API key and no verified client certificate"},
		{"DNS SAN, any case", peerCtx(checkout, true, ""), "checkout"},
		{"URI SAN", peerCtx(cert(tlstest.Identity{URIs: []string{"spiffe://shop/checkout"}}), true, ""), "checkout"},
		{"email SAN, domain in any case", peerCtx(cert(tlstest.Identity{Emails: []string{"ops@EXAMPLE.com"}}), true, ""), "ops"},
		{"common name", peerCtx(cert(tlstest.Identity{CommonName: "ops"}), true, ""), "ops"},
		{"common name is exact", peerCtx(cert(tlstest.Identity{CommonName: "OPS"}), true, ""), "not mapped"},
		{"whole subject", peerCtx(cert(tlstest.Identity{CommonName: "pay-1", Organization: []string{"Shop"}}), true, ""), "payments"},
		{"whole subject is exact", peerCtx(cert(tlstest.Identity{CommonName: "pay-1", Organization: []string{"Other"}}), true, ""), "not mapped"},
		{"unverified certificate", peerCtx(checkout, false, ""), "no API key and no verified client certificate"},
		{"unmapped certificate", peerCtx(cert(tlstest.Identity{CommonName: "stranger", DNSNames: []string{"other.internal"}}), true, ""), "not mapped"},
		{"two sources", peerCtx(cert(tlstest.Identity{CommonName: "ops", DNSNames: []string{"checkout.internal"}}), true, ""), "names two sources"},
		{"known key over certificate", peerCtx(checkout, true, "k"), "keyed"},
		{"unknown key over certificate", peerCtx(checkout, true, "wrong"), "unknown API key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, f := srcs.authenticate(c.ctx)
			switch {
			case f != nil && f.Reason != ingestv1.Reason_UNAUTHENTICATED:
				t.Fatalf("refused %v, want UNAUTHENTICATED", f.Reason)
			case f != nil && !strings.Contains(f.Message, c.want):
				t.Fatalf("refused %q, want %q", f.Message, c.want)
			case f == nil && src.name != c.want:
				t.Fatalf("source %q, want %q", src.name, c.want)
			}
		})
	}
}

// TestTapSeesClientCertificate: a gRPC InTapHandle's context carries the
// verified peer, so authentication can move to the tap.
func TestTapSeesClientCertificate(t *testing.T) {
	block, serverCA, clientCA := tlsFiles(t)
	r, err := tlsfiles.NewReloader(block, "grpc", tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	srcs := newSources([]SourceConfig{{Name: "checkout", ClientCerts: []string{"cn:checkout"}, EventTypes: []string{"*"}}}, 0)
	var mu sync.Mutex
	var seen []string
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(r.Config())), grpc.InTapHandle(func(ctx context.Context, _ *tap.Info) (context.Context, error) {
		src, f := srcs.authenticate(ctx)
		mu.Lock()
		defer mu.Unlock()
		if f != nil {
			seen = append(seen, f.Message)
		} else {
			seen = append(seen, src.name)
		}
		return ctx, nil
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	leaf := clientCA.Client(t, tlstest.Identity{CommonName: "checkout"}).TLS(t)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: serverCA.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{leaf}})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = conn.Invoke(ctx, "/sluice.test.v1.Nothing/Call", &ingestv1.PublishRequest{}, &ingestv1.PublishResponse{})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "checkout" {
		t.Fatalf("the tap authenticated %q, want checkout", seen)
	}
}

// TestServerRegistersTLSReloads: the listeners' reload counter is on the
// Registerer given to NewServer, one listener label each.
func TestServerRegistersTLSReloads(t *testing.T) {
	block, _, _ := tlsFiles(t)
	cfg := NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.GRPCTLS.ServerConfig, cfg.HTTPTLS.ServerConfig = block, block
	cfg.Sources = []SourceConfig{{Name: "a", KeyHashes: []string{HashKey("k")}, EventTypes: []string{"*"}}}
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(cfg, served(registry), nil, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := NewServer(svc, WithServerRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	listeners := map[string]int{}
	for _, f := range fams {
		if f.GetName() != "sluice_tls_reloads_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "listener" {
					listeners[l.GetValue()]++
				}
			}
		}
	}
	if listeners["grpc"] != 2 || listeners["http"] != 2 {
		t.Errorf("sluice_tls_reloads_total series by listener: %v, want ok and error for grpc and http", listeners)
	}
}
