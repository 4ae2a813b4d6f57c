package observability

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var (
	repoRoot  = filepath.Join("..", "..")
	ruleFiles = []string{"../prometheus/recording.rules.yaml", "../prometheus/alerts.rules.yaml"}
	dashFile  = "../grafana/sluice.dashboard.json"
)

func loadAll(t *testing.T) Exprs {
	t.Helper()
	var x Exprs
	if err := LoadRules(&x, ruleFiles...); err != nil {
		t.Fatal(err)
	}
	if err := LoadDashboard(&x, dashFile); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestExpressionsParse: every rule expression, dashboard target and
// variable selector parses with Prometheus's own parser, with Grafana's
// variables replaced.
func TestExpressionsParse(t *testing.T) {
	x := loadAll(t)
	if len(x.Queries) < 40 {
		t.Fatalf("only %d expressions found", len(x.Queries))
	}
	for _, e := range x.Queries {
		if _, err := Names(e); err != nil {
			t.Error(err)
		}
	}
}

// TestMissingChecksItself: the checker reports a metric nobody exports, a
// histogram suffix on a metric that is not a histogram, an undefined
// recording rule and an expression that does not parse.
func TestMissingChecksItself(t *testing.T) {
	exported := exportedNames(map[string]*dto.MetricFamily{
		"sluice_events_total":             {Name: new("sluice_events_total"), Type: dto.MetricType_COUNTER.Enum()},
		"sluice_request_duration_seconds": {Name: new("sluice_request_duration_seconds"), Type: dto.MetricType_HISTOGRAM.Enum()},
	})
	recorded := map[string]bool{"sluice:events_good:rate5m": true}
	cases := []struct {
		name, promql string
		missing      []string
		parseErr     bool
	}{
		{"exported counter", `sum(rate(sluice_events_total{outcome="ACCEPTED"}[5m]))`, nil, false},
		{"histogram series", `histogram_quantile(0.99, sum by (le) (rate(sluice_request_duration_seconds_bucket[5m])))`, nil, false},
		{"recorded", `sluice:events_good:rate5m > 0`, nil, false},
		{"fake name", `rate(sluice_no_such_metric_total[5m]) > 0 and sluice_events_total`, []string{"case: sluice_no_such_metric_total"}, false},
		{"bucket of a counter", `sluice_events_total_bucket`, []string{"case: sluice_events_total_bucket"}, false},
		{"undefined recording rule", `sluice:nothing:rate5m`, []string{"case: sluice:nothing:rate5m"}, false},
		{"name matcher", `{__name__="sluice_gone_total"}`, []string{"case: sluice_gone_total"}, false},
		{"does not parse", `sum(rate(sluice_events_total[5m])`, nil, true},
		{"variable left", `rate(sluice_events_total[$__rate_interval])`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Missing(Exprs{Queries: []Expr{{Where: "case", PromQL: tc.promql}}, Recorded: recorded}, exported)
			if (err != nil) != tc.parseErr {
				t.Fatalf("error %v, want one: %v", err, tc.parseErr)
			}
			if strings.Join(got, "\n") != strings.Join(tc.missing, "\n") {
				t.Fatalf("missing %q, want %q", got, tc.missing)
			}
		})
	}
}

// TestMetricsExported: every metric the rules and the dashboard name is
// exported by a running `sluice dev` or `sluice consumer`.
func TestMetricsExported(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs sluice")
	}
	x := loadAll(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	httpAddr, grpcAddr, devAdmin, consumerAdmin := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	_, kafkaPort, _ := net.SplitHostPort(freeAddr(t))
	start(t, bin, "dev", "--http", httpAddr, "--grpc", grpcAddr, "--admin", devAdmin, "--kafka-port", kafkaPort, "--tail=false")
	plain := &http.Client{Timeout: 5 * time.Second}
	devURL := "http://" + devAdmin + "/metrics"
	if !waitFor(60*time.Second, func() bool { _, err := scrape(plain, devURL); return err == nil }) {
		t.Fatal("sluice dev's /metrics did not answer within 60s")
	}

	// The consumer's admin listener speaks TLS, so that a scrape of it
	// holds the certificate expiry gauge (sluice dev serves no TLS).
	certFile, keyFile, pool := selfSigned(t, tmp)
	contracts, err := filepath.Abs(filepath.Join(repoRoot, "examples", "contracts.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(tmp, "consumer.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
consumer: {group: observability-check, lag_interval: 1s}
sink: {kind: sqlite, sqlite: {path: %s}}
contracts:
  descriptor_set: %s
  types: [examples.shop.v1.OrderPlaced, examples.identity.v1.UserProfileUpdated, examples.logs.v1.LogLine]
kafka: {brokers: ["127.0.0.1:%s"]}
log: {level: warn}
admin: {addr: %s, tls: {cert_file: %s, key_file: %s}}
`, filepath.Join(tmp, "events.db"), contracts, kafkaPort, consumerAdmin, certFile, keyFile))
	start(t, bin, "consumer", "--config", cfg)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	consumerURL := "https://" + consumerAdmin + "/metrics"

	// Some series appear only once the processes are under way (partition
	// lag after the group's assignment, a poller's cursor after its first
	// page): scrape until nothing is missing or the deadline passes.
	var missing []string
	var scrapeErr error
	waitFor(90*time.Second, func() bool {
		exported := map[string]bool{}
		for _, s := range []struct {
			c   *http.Client
			url string
		}{{plain, devURL}, {secure, consumerURL}} {
			fams, err := scrape(s.c, s.url)
			if err != nil {
				scrapeErr = err
				return false
			}
			for n := range exportedNames(fams) {
				exported[n] = true
			}
		}
		scrapeErr = nil
		missing, err = Missing(x, exported)
		if err != nil {
			t.Fatal(err)
		}
		return len(missing) == 0
	})
	if scrapeErr != nil {
		t.Fatalf("scrape: %v", scrapeErr)
	}
	if len(missing) > 0 {
		t.Fatalf("metrics referenced but exported by neither sluice dev nor sluice consumer:\n%s", strings.Join(missing, "\n"))
	}
}

// exportedNames is the names a scrape's families answer to: a histogram's
// also as its _bucket, _sum and _count series, a summary's as _sum and
// _count.
func exportedNames(fams map[string]*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for name, f := range fams {
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names
}

func scrape(c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// start runs bin with args until the test ends: then it is interrupted,
// killed if it has not exited within 20s, and waited for.
func start(t *testing.T, bin string, args ...string) {
	t.Helper()
	var out lockedBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("sluice %s did not exit after a kill", args[0])
			}
		}
		if t.Failed() {
			t.Logf("sluice %s output:\n%s", args[0], out.String())
		}
	})
}

// waitFor checks cond until it holds or d has passed, and reports which.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// selfSigned writes a certificate for 127.0.0.1 that is its own CA, and
// returns its files and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a process's output, written by its copying goroutines
// and read at the end.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
