package loadgen_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/tools/loadgen"
)

// The grpc, stream, rest and client targets speak TLS to a gateway whose listeners
// do, verify it with --tls-ca, and present a client certificate that a
// gateway requiring one maps to a source; without the CA nothing is
// answered.
func TestTargetsSpeakTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "loadgen-test-ca")
	tlstest.WriteFile(t, filepath.Join(dir, "ca.pem"), ca.PEM)
	ca.Server(t).Write(t, filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem"))
	ca.Client(t, tlstest.Identity{CommonName: "bench-client"}).Write(t, filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
	listener := tlsfiles.ListenerConfig{ServerConfig: tlsfiles.ServerConfig{
		CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem"),
		ClientCAFile: filepath.Join(dir, "ca.pem"), ClientAuth: tlsfiles.ClientAuthRequire,
	}}
	gw := startGateway(t, func(c *gateway.Config) {
		c.GRPCTLS, c.HTTPTLS = listener, listener
		c.Sources = append(c.Sources, gateway.SourceConfig{Name: "by-cert", ClientCerts: []string{"cn:bench-client"}, EventTypes: []string{"*"}})
	})
	withCert := tlsfiles.ClientConfig{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem")}

	for _, target := range []string{loadgen.TargetGRPC, loadgen.TargetStream, loadgen.TargetREST, loadgen.TargetClient} {
		t.Run(target, func(t *testing.T) {
			cfg := loadgen.NewDefaultConfig()
			cfg.Target, cfg.Requests, cfg.Concurrency, cfg.EventsPerRequest = target, 5, 2, 10
			cfg.Addr = gw.srv.GRPCAddr()
			if target == loadgen.TargetREST {
				cfg.Addr, cfg.Encoding = gw.srv.HTTPAddr(), loadgen.EncodingJSON
			}
			for _, key := range []string{testKey, ""} { // by API key, then by certificate alone
				cfg.APIKey, cfg.TLS = key, withCert
				rep := runLoad(t, cfg)
				if rep.Accepted != 50 || rep.Answered != 5 {
					t.Fatalf("key %q: accepted %d of 50, answered %d of 5: %+v %s", key, rep.Accepted, rep.Answered, rep.Failures, rep.FirstError)
				}
			}
			// The system roots do not know the test CA.
			cfg.APIKey, cfg.TLS, cfg.Duration = testKey, tlsfiles.ClientConfig{Enabled: true}, 5*time.Second
			if target == loadgen.TargetClient {
				// The client retries the handshake's failure until the
				// timeout, then answers the events undelivered (a Publish
				// whose deadline comes first is a timeout).
				cfg.Timeout = time.Second
				rep := runLoad(t, cfg)
				if rep.Accepted != 0 || rep.Failures["client:UNDELIVERED"] == 0 || rep.FailedEvents+rep.UnansweredEvents != rep.Events || !strings.Contains(rep.FirstError, "certificate") {
					t.Fatalf("unverified gateway: accepted %d, failed %d and unanswered %d of %d events, first error %q",
						rep.Accepted, rep.FailedEvents, rep.UnansweredEvents, rep.Events, rep.FirstError)
				}
				return
			}
			if rep := runLoad(t, cfg); rep.Answered != 0 || !strings.Contains(rep.FirstError, "certificate") {
				t.Fatalf("unverified gateway: answered %d, first error %q", rep.Answered, rep.FirstError)
			}
		})
	}
}

func runLoad(t *testing.T, cfg loadgen.Config) *loadgen.Report {
	t.Helper()
	_, rep, _ := runLedgered(t, cfg)
	return rep
}

// runLedgered runs cfg's load to its end and returns its generator, its
// report and its ledger of acknowledged ids.
func runLedgered(t *testing.T, cfg loadgen.Config) (*loadgen.Generator, *loadgen.Report, string) {
	t.Helper()
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	target, err := loadgen.NewTarget(cfg, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	var led strings.Builder
	rep, err := loadgen.Run(context.Background(), cfg, gen, target, loadgen.WithLedger(&led))
	if err != nil {
		t.Fatal(err)
	}
	return gen, rep, led.String()
}

func TestTLSConfigValidate(t *testing.T) {
	cfg := loadgen.NewDefaultConfig()
	cfg.TLS.CertFile = "client.pem"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "tls-cert") {
		t.Errorf("a certificate without a key: %v", err)
	}
	// On direct, the error names the flag that was given.
	for flag, set := range map[string]func(*tlsfiles.ClientConfig){
		"--tls:":    func(c *tlsfiles.ClientConfig) { c.Enabled = true },
		"--tls-ca:": func(c *tlsfiles.ClientConfig) { c.CAFile = "ca.pem" },
		"--tls-cert:": func(c *tlsfiles.ClientConfig) {
			c.CertFile, c.KeyFile = "client.pem", "client-key.pem"
		},
	} {
		cfg = loadgen.NewDefaultConfig()
		cfg.Target = loadgen.TargetDirect
		set(&cfg.TLS)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("TLS flags on direct: %v, want it to name %s", err, flag)
		}
	}
	// A file that does not load is named by its flag.
	cfg = loadgen.NewDefaultConfig()
	cfg.TLS.CAFile = filepath.Join(t.TempDir(), "absent.pem")
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadgen.NewTarget(cfg, gen); err == nil || !strings.Contains(err.Error(), "--tls-ca:") {
		t.Errorf("an absent CA file: %v", err)
	}
}
