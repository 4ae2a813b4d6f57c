package gateway_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
	"github.com/sluicehq/sluice/record"
)

// tlsGateway is a harness whose listeners both serve TLS from files in a
// directory of the test's, with two sources known by certificate:
// "checkout" (log lines only) by DNS and URI SAN, "billing" (every type) by
// common name.
type tlsGateway struct {
	*harness
	serverCA, clientCA *tlstest.CA
	certFile, keyFile  string
}

func newTLSGateway(t *testing.T, auth tlsfiles.ClientAuth) *tlsGateway {
	t.Helper()
	dir := t.TempDir()
	g := &tlsGateway{serverCA: tlstest.NewCA(t, "server CA"), clientCA: tlstest.NewCA(t, "client CA"),
		certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	g.serverCA.Server(t).Write(t, g.certFile, g.keyFile)
	caFile := filepath.Join(dir, "clients.pem")
	tlstest.WriteFile(t, caFile, g.clientCA.PEM)
	block := tlsfiles.ServerConfig{CertFile: g.certFile, KeyFile: g.keyFile, ClientAuth: auth}
	if auth != tlsfiles.ClientAuthNone {
		block.ClientCAFile = caFile
	}
	g.harness = newHarness(t, harnessOpts{config: func(c *gateway.Config) {
		c.GRPCTLS.ServerConfig = block
		c.HTTPTLS.ServerConfig = block
		if auth != tlsfiles.ClientAuthNone {
			c.Sources = append(c.Sources,
				gateway.SourceConfig{Name: "checkout", ClientCerts: []string{"dns:checkout.internal", "uri:spiffe://shop/checkout"}, EventTypes: []string{typeLog}},
				gateway.SourceConfig{Name: "billing", ClientCerts: []string{"cn:billing"}, EventTypes: []string{"*"}})
		}
	}})
	return g
}

// clientTLS trusts the server's CA and presents client when it is not nil,
// even to a server that names other CAs, so the server's verification is
// what decides.
func (g *tlsGateway) clientTLS(t *testing.T, client *tlstest.Leaf) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: g.serverCA.Pool(), ServerName: "localhost"}
	if client != nil {
		cert := client.TLS(t)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return cfg
}

// grpcClient is a new connection of its own, so it handshakes anew.
func (g *tlsGateway) grpcClient(t *testing.T, client *tlstest.Leaf) ingestv1.IngestServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(g.srv.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(g.clientTLS(t, client))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ingestv1.NewIngestServiceClient(conn)
}

func publishOver(t *testing.T, c ingestv1.IngestServiceClient, key string, events ...ev) (*ingestv1.PublishResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(withKey(context.Background(), key), 15*time.Second)
	defer cancel()
	req := &ingestv1.PublishRequest{}
	for _, e := range events {
		req.Events = append(req.Events, e.proto())
	}
	return c.Publish(ctx, req)
}

// httpsClient makes new connections of its own; h2 says whether it offers
// HTTP/2 or HTTP/1.1 only.
func (g *tlsGateway) httpsClient(t *testing.T, client *tlstest.Leaf, h2 bool) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: g.clientTLS(t, client), ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

func (g *tlsGateway) postTLS(t *testing.T, hc *http.Client, key string, body []byte) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://"+g.srv.HTTPAddr()+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// sourceOf is the source header of the record of event id in topic.
func (g *tlsGateway) sourceOf(t *testing.T, typ, id string) string {
	t.Helper()
	for _, r := range g.consumeIDs(g.topics[typ], []string{id}) {
		if header(r, record.HeaderEventID) == id {
			return header(r, record.HeaderSource)
		}
	}
	t.Fatalf("no record of %s", id)
	return ""
}

// TestTLSRequireRefusesWithoutCertificate: with client_auth require, a
// caller without a certificate, or with one of another CA, is refused at
// the handshake on both listeners, API key or not.
func TestTLSRequireRefusesWithoutCertificate(t *testing.T) {
	g := newTLSGateway(t, tlsfiles.ClientAuthRequire)
	e := ev{ID: "tls-none", Type: typeLog, Key: "svc", At: g.clock.Now(), JSON: examples.LogLineJSON}
	stranger := tlstest.NewCA(t, "another CA").Client(t, tlstest.Identity{CommonName: "billing"})
	for name, client := range map[string]*tlstest.Leaf{"no certificate": nil, "another CA": stranger} {
		t.Run(name, func(t *testing.T) {
			// Unavailable, not Unauthenticated: no call got as far as
			// the service (under TLS 1.3 the client learns of the refusal
			// on its first write, so the message varies).
			_, err := publishOver(t, g.grpcClient(t, client), keyAll, e)
			if status.Code(err) != codes.Unavailable {
				t.Errorf("gRPC: %v, want the handshake refused", err)
			}
			resp, _, err := g.postTLS(t, g.httpsClient(t, client, true), keyAll, restBody(e))
			if err == nil {
				t.Errorf("REST answered %d, want the handshake refused", resp.StatusCode)
			}
		})
	}
	billing := g.clientCA.Client(t, tlstest.Identity{CommonName: "billing"})
	if out, err := publishOver(t, g.grpcClient(t, billing), keyAll, e); err != nil {
		t.Fatalf("with a certificate: %v", err)
	} else {
		wantAccepted(t, out.GetResults(), "tls-none")
	}
}

// TestTLSCertificateIsSource: a verified certificate mapped to a source
// publishes as that source, within its allowed types, over gRPC and REST;
// a verified but unmapped one is UNAUTHENTICATED; an API key, when sent,
// decides over the certificate.
func TestTLSCertificateIsSource(t *testing.T) {
	g := newTLSGateway(t, tlsfiles.ClientAuthRequire)
	now := g.clock.Now()
	checkout := g.clientCA.Client(t, tlstest.Identity{CommonName: "pod-7", DNSNames: []string{"Checkout.Internal"}})
	billing := g.clientCA.Client(t, tlstest.Identity{CommonName: "billing"})
	unmapped := g.clientCA.Client(t, tlstest.Identity{CommonName: "stranger", URIs: []string{"spiffe://shop/other"}})
	logLine := func(id string) ev { return ev{ID: id, Type: typeLog, Key: "svc", At: now, JSON: examples.LogLineJSON} }
	order := ev{ID: "tls-order", Type: typeOrder, Key: "cust-1", At: now, JSON: examples.OrderPlacedJSON}
	forbidden := expect{refusal{reason: ingestv1.Reason_FORBIDDEN_EVENT_TYPE}, 403, codes.OK}
	unauthenticated := expect{refusal{reason: ingestv1.Reason_UNAUTHENTICATED}, 401, codes.Unauthenticated}

	t.Run("grpc", func(t *testing.T) {
		c := g.grpcClient(t, checkout)
		out, err := publishOver(t, c, "", logLine("tls-grpc-1"))
		if err != nil {
			t.Fatal(err)
		}
		wantAccepted(t, out.GetResults(), "tls-grpc-1")
		if src := g.sourceOf(t, typeLog, "tls-grpc-1"); src != "checkout" {
			t.Errorf("published as %q, want checkout", src)
		}
		out, err = publishOver(t, c, "", order)
		checkGRPC(t, forbidden, out, err)

		// A key sent decides: a known one publishes as its source...
		out, err = publishOver(t, c, keyAll, logLine("tls-grpc-key"))
		if err != nil {
			t.Fatal(err)
		}
		wantAccepted(t, out.GetResults(), "tls-grpc-key")
		if src := g.sourceOf(t, typeLog, "tls-grpc-key"); src != "all" {
			t.Errorf("with a key, published as %q, want all", src)
		}
		// ...and an unknown one is refused although the certificate maps.
		out, err = publishOver(t, c, "not-a-key", logLine("tls-grpc-bad-key"))
		checkGRPC(t, unauthenticated, out, err)

		out, err = publishOver(t, g.grpcClient(t, unmapped), "", logLine("tls-grpc-unmapped"))
		checkGRPC(t, unauthenticated, out, err)
		if !strings.Contains(status.Convert(err).Message(), "not mapped") {
			t.Errorf("message %q does not say the certificate is not mapped", status.Convert(err).Message())
		}
	})
	t.Run("rest", func(t *testing.T) {
		resp, body, err := g.postTLS(t, g.httpsClient(t, billing, true), "", restBody(order))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Fatalf("%s %d: %s", resp.Proto, resp.StatusCode, body)
		}
		wantAccepted(t, mustResults(t, body), "tls-order")
		if src := g.sourceOf(t, typeOrder, "tls-order"); src != "billing" {
			t.Errorf("published as %q, want billing", src)
		}
		hc := g.httpsClient(t, checkout, false)
		resp, body, err = g.postTLS(t, hc, "", restBody(logLine("tls-rest-1")))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
			t.Fatalf("%s %d: %s", resp.Proto, resp.StatusCode, body)
		}
		if src := g.sourceOf(t, typeLog, "tls-rest-1"); src != "checkout" {
			t.Errorf("published as %q, want checkout", src)
		}
		order2 := order
		order2.ID = "tls-order-2"
		resp, body, err = g.postTLS(t, hc, "", restBody(order2))
		if err != nil {
			t.Fatal(err)
		}
		checkREST(t, forbidden, resp, body)

		resp, body, err = g.postTLS(t, hc, "not-a-key", restBody(logLine("tls-rest-bad-key")))
		if err != nil {
			t.Fatal(err)
		}
		checkREST(t, unauthenticated, resp, body)

		resp, body, err = g.postTLS(t, g.httpsClient(t, unmapped, true), "", restBody(logLine("tls-rest-unmapped")))
		if err != nil {
			t.Fatal(err)
		}
		checkREST(t, unauthenticated, resp, body)
		if !strings.Contains(string(body), "not mapped") {
			t.Errorf("body %s does not say the certificate is not mapped", body)
		}
	})
}

// TestTLSServerOnlyWithAPIKey: TLS without client certificates, sources
// by API key, over gRPC and REST (HTTP/2 and HTTP/1.1).
func TestTLSServerOnlyWithAPIKey(t *testing.T) {
	g := newTLSGateway(t, tlsfiles.ClientAuthNone)
	e := func(id string) ev {
		return ev{ID: id, Type: typeLog, Key: "svc", At: g.clock.Now(), JSON: examples.LogLineJSON}
	}
	out, err := publishOver(t, g.grpcClient(t, nil), keyRestricted, e("tls-key-grpc"))
	if err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, out.GetResults(), "tls-key-grpc")
	for _, h2 := range []bool{true, false} {
		id := "tls-key-rest-h1"
		if h2 {
			id = "tls-key-rest-h2"
		}
		resp, body, err := g.postTLS(t, g.httpsClient(t, nil, h2), keyRestricted, restBody(e(id)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || (resp.ProtoMajor == 2) != h2 {
			t.Fatalf("%s %d: %s", resp.Proto, resp.StatusCode, body)
		}
		wantAccepted(t, mustResults(t, body), id)
	}
	if src := g.sourceOf(t, typeLog, "tls-key-grpc"); src != "restricted" {
		t.Errorf("published as %q, want restricted", src)
	}
	// Plaintext to a TLS listener reaches no handler: an authenticated
	// request gets Go's "HTTP request to an HTTPS server" 400, not an
	// answer of the API.
	req, err := http.NewRequest(http.MethodPost, "http://"+g.srv.HTTPAddr()+"/v1/events", bytes.NewReader(restBody(e("tls-plaintext"))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", keyRestricted)
	if resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTPS") {
			t.Errorf("plaintext to the TLS listener: %d %s", resp.StatusCode, body)
		}
	}
}

// An unauthenticated REST request over HTTP/2 is refused on its stream
// alone: the connection, which other requests share, stays open. (Over
// HTTP/1.1 the connection closes, since the unread body cannot be
// skipped otherwise.)
func TestRESTRefusalKeepsHTTP2Connection(t *testing.T) {
	g := newTLSGateway(t, tlsfiles.ClientAuthNone)
	e := func(id string) ev {
		return ev{ID: id, Type: typeLog, Key: "svc", At: g.clock.Now(), JSON: examples.LogLineJSON}
	}
	hc := g.httpsClient(t, nil, true)
	var conns []bool // reused, per request
	do := func(key, id string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "https://"+g.srv.HTTPAddr()+"/v1/events", bytes.NewReader(restBody(e(id))))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", key)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { conns = append(conns, info.Reused) },
		}))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s, want HTTP/2", resp.Proto)
		}
		return resp.StatusCode
	}
	if code := do(keyRestricted, "h2-before"); code != http.StatusOK {
		t.Fatalf("authorized: %d", code)
	}
	if code := do("no-such-key", "h2-refused"); code != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d", code)
	}
	if code := do(keyRestricted, "h2-after"); code != http.StatusOK {
		t.Fatalf("authorized after a refusal: %d", code)
	}
	if len(conns) != 3 || !conns[1] || !conns[2] {
		t.Errorf("connection reused per request: %v; the refusal closed the shared connection", conns)
	}
}

// serverSerial is the serial of the certificate a new connection to addr
// is served.
func (g *tlsGateway) serverSerial(t *testing.T, addr string, client *tlstest.Leaf) string {
	t.Helper()
	cfg := g.clientTLS(t, client)
	cfg.NextProtos = []string{"h2"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestTLSRotation: after the certificate files are replaced, new
// connections to both listeners get the new certificate, and publish.
func TestTLSRotation(t *testing.T) {
	g := newTLSGateway(t, tlsfiles.ClientAuthRequire)
	billing := g.clientCA.Client(t, tlstest.Identity{CommonName: "billing"})
	before := g.serverSerial(t, g.srv.GRPCAddr(), billing)
	if got := g.serverSerial(t, g.srv.HTTPAddr(), billing); got != before {
		t.Fatalf("listeners serve %s and %s", before, got)
	}
	next := g.serverCA.Server(t)
	next.Write(t, g.certFile, g.keyFile)
	want := next.Cert.SerialNumber.String()
	for _, addr := range []string{g.srv.GRPCAddr(), g.srv.HTTPAddr()} {
		eventually(t, "the new certificate on "+addr, func() bool { return g.serverSerial(t, addr, billing) == want })
	}
	e := ev{ID: "tls-rotated", Type: typeLog, Key: "svc", At: g.clock.Now(), JSON: examples.LogLineJSON}
	out, err := publishOver(t, g.grpcClient(t, billing), "", e)
	if err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, out.GetResults(), "tls-rotated")
	e.ID = "tls-rotated-rest"
	resp, body, err := g.postTLS(t, g.httpsClient(t, billing, true), "", restBody(e))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("REST after rotation: %v %s", err, body)
	}
}
