package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// listenerTLS builds the listeners' TLS from their blocks: nil credentials
// and a nil config for a listener that serves plaintext.
func listenerTLS(cfg Config, log *slog.Logger, reg prometheus.Registerer) (credentials.TransportCredentials, *tls.Config, error) {
	var grpcCreds credentials.TransportCredentials
	var httpTLS *tls.Config
	if cfg.GRPCTLS.Enabled() {
		r, err := tlsfiles.NewReloader(cfg.GRPCTLS.ServerConfig, "grpc", tlsfiles.WithLogger(log), tlsfiles.WithRegisterer(reg))
		if err != nil {
			return nil, nil, tlsFieldErr(tlsfiles.At("grpc_tls", err))
		}
		grpcCreds = credentials.NewTLS(r.Config())
	}
	if cfg.HTTPTLS.Enabled() {
		// Offered on every handshake: a config from GetConfigForClient
		// replaces the one http.Server adds its protocols to.
		r, err := tlsfiles.NewReloader(cfg.HTTPTLS.ServerConfig, "http", tlsfiles.WithLogger(log), tlsfiles.WithRegisterer(reg),
			tlsfiles.WithNextProtos("h2", "http/1.1"))
		if err != nil {
			return nil, nil, tlsFieldErr(tlsfiles.At("http_tls", err))
		}
		httpTLS = r.Config()
	}
	return grpcCreds, httpTLS, nil
}

// withPeerTLS makes a REST request's TLS state visible where a gRPC call's
// is: as the peer's credentials.TLSInfo. grpc-gateway calls the Service in
// process, so without it authenticate would not see a REST caller's
// certificate. The peer's Addr is not set. A nil state (plaintext) leaves
// ctx as it is.
func withPeerTLS(ctx context.Context, state *tls.ConnectionState) context.Context {
	if state == nil {
		return ctx
	}
	return peer.NewContext(ctx, &peer.Peer{
		AuthInfo: credentials.TLSInfo{State: *state, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}},
	})
}

// restPeer carries each request's TLS state into its context.
func restPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			r = r.WithContext(withPeerTLS(r.Context(), r.TLS))
		}
		next.ServeHTTP(w, r)
	})
}

// verifiedLeaf is the caller's client certificate when the TLS layer
// verified it against client_ca_file, else nil. Only VerifiedChains count:
// the peer certificates alone are whatever the client sent.
func verifiedLeaf(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

// parseCertMatch checks a client_certs entry and returns it in the form
// certIdentities gives a certificate's names.
func parseCertMatch(entry string) (string, error) {
	kind, name, ok := strings.Cut(entry, ":")
	if !ok || name == "" {
		return "", errors.New(`must be "dns:<name>", "uri:<uri>", "email:<address>", "cn:<common name>" or "subject:<RFC 2253 name>"`)
	}
	switch kind {
	case "dns":
		if strings.ContainsAny(name, "* \t") {
			return "", errors.New("a DNS name without wildcards or spaces: names are matched exactly")
		}
		return "dns:" + strings.ToLower(name), nil
	case "uri":
		u, err := url.Parse(name)
		if err != nil || u.Scheme == "" {
			return "", errors.New("uri: needs an absolute URI, such as spiffe://domain/workload")
		}
		return "uri:" + u.String(), nil
	case "email":
		if !strings.Contains(name, "@") {
			return "", errors.New("email: needs an address with @")
		}
		return "email:" + foldEmail(name), nil
	case "cn":
		return "cn:" + name, nil
	case "subject":
		if !strings.Contains(name, "=") {
			return "", errors.New("subject: needs a distinguished name as RFC 2253 writes it, such as CN=checkout,O=Shop")
		}
		return "subject:" + name, nil
	}
	return "", errors.New(`must start with dns:, uri:, email:, cn: or subject:`)
}

// certIdentities are the names a certificate says its holder has, in the
// form parseCertMatch gives entries.
func certIdentities(c *x509.Certificate) []string {
	var out []string
	for _, n := range c.DNSNames {
		out = append(out, "dns:"+strings.ToLower(n))
	}
	for _, u := range c.URIs {
		out = append(out, "uri:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+foldEmail(e))
	}
	if c.Subject.CommonName != "" {
		out = append(out, "cn:"+c.Subject.CommonName)
	}
	// The whole subject, as RFC 2253 writes it (most specific first), as
	// `openssl x509 -noout -subject -nameopt RFC2253` prints it too.
	if len(c.Subject.Names) > 0 {
		out = append(out, "subject:"+c.Subject.String())
	}
	return out
}

// foldEmail lower-cases an address's domain, which is not case-sensitive;
// the local part is.
func foldEmail(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	return addr[:at+1] + strings.ToLower(addr[at+1:])
}
