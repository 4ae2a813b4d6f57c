package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
)

// ClientAuth is whether a listener asks for client certificates.
type ClientAuth string

const (
	// ClientAuthNone asks for no client certificate.
	ClientAuthNone ClientAuth = "none"
	// ClientAuthRequest asks for one and verifies it when it is sent.
	ClientAuthRequest ClientAuth = "request"
	// ClientAuthRequire refuses the handshake without a verified one.
	ClientAuthRequire ClientAuth = "require"
)

// ServerConfig is one listener's TLS block. The zero value, like
// NewDefaultServerConfig, serves plaintext.
type ServerConfig struct {
	// CertFile is the PEM certificate chain, leaf first; empty: no TLS.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key of the leaf.
	KeyFile string `yaml:"key_file"`
	// ClientCAFile holds the PEM CAs that sign client certificates.
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientAuth is none (the default, also when empty), request or require.
	ClientAuth ClientAuth `yaml:"client_auth"`
}

// NewDefaultServerConfig returns a block that serves plaintext.
func NewDefaultServerConfig() ServerConfig {
	return ServerConfig{ClientAuth: ClientAuthNone}
}

// Enabled says whether the listener speaks TLS.
func (c ServerConfig) Enabled() bool { return c.CertFile != "" }

// VerifiesClients says whether client certificates are asked for and
// verified against ClientCAFile.
func (c ServerConfig) VerifiesClients() bool {
	return c.Enabled() && (c.ClientAuth == ClientAuthRequest || c.ClientAuth == ClientAuthRequire)
}

// Validate names the first wrong field; it reads the files, so a
// certificate that does not parse or match its key stops start-up.
func (c ServerConfig) Validate() error {
	if err := c.validateFields(); err != nil || !c.Enabled() {
		return err
	}
	_, err := load(c)
	return err
}

// validateFields checks the fields without reading the files.
func (c ServerConfig) validateFields() error {
	switch c.ClientAuth {
	case "", ClientAuthNone, ClientAuthRequest, ClientAuthRequire:
	default:
		return fieldErr("client_auth", fmt.Errorf("%q: must be none, request or require", c.ClientAuth))
	}
	asks := c.ClientAuth == ClientAuthRequest || c.ClientAuth == ClientAuthRequire
	if !c.Enabled() {
		switch {
		case c.KeyFile != "":
			return fieldErr("cert_file", errors.New("must be set with key_file"))
		case c.ClientCAFile != "":
			return fieldErr("cert_file", errors.New("must be set: client_ca_file needs TLS"))
		case asks:
			return fieldErr("cert_file", fmt.Errorf("must be set: client_auth %s needs TLS", c.ClientAuth))
		}
		return nil
	}
	switch {
	case c.KeyFile == "":
		return fieldErr("key_file", errors.New("must be set with cert_file"))
	case asks && c.ClientCAFile == "":
		return fieldErr("client_ca_file", fmt.Errorf("must be set: client_auth %s verifies client certificates against it", c.ClientAuth))
	case !asks && c.ClientCAFile != "":
		return fieldErr("client_auth", errors.New("is none, so client_ca_file would not be used: set request or require"))
	}
	return nil
}

// ConfigError names a field of the block and what is wrong with it.
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return "tlsfiles: " + e.Field + ": " + e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &ConfigError{Field: field, Err: err} }

// loaded is one consistent read of the files.
type loaded struct {
	cert      tls.Certificate
	clientCAs *x509.CertPool // nil without client_ca_file
}

// load reads and checks the files; errors name the file's field.
func load(c ServerConfig) (*loaded, error) {
	cert, err := loadKeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, err
	}
	out := &loaded{cert: cert}
	if c.ClientCAFile != "" {
		if out.clientCAs, err = loadPool("client_ca_file", c.ClientCAFile); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadKeyPair reads a certificate chain and the key of its leaf; errors
// name cert_file or key_file.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fieldErr("cert_file", err)
	}
	chain, err := parseCertificates(certPEM)
	if err != nil {
		return tls.Certificate{}, fieldErr("cert_file", fmt.Errorf("%s: %w", certFile, err))
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fieldErr("key_file", err)
	}
	// The chain parsed, so what X509KeyPair refuses now is the key.
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fieldErr("key_file", fmt.Errorf("%s and %s: %w", certFile, keyFile, err))
	}
	cert.Leaf = chain[0]
	return cert, nil
}

// loadPool reads a PEM bundle of CA certificates; errors name field.
func loadPool(field, path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fieldErr(field, err)
	}
	cas, err := parseCertificates(data)
	if errors.Is(err, errNoCertificate) {
		return nil, fieldErr(field, fmt.Errorf("%s holds no PEM certificate", path))
	} else if err != nil {
		return nil, fieldErr(field, fmt.Errorf("%s: %w", path, err))
	}
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	return pool, nil
}

// errNoCertificate is parseCertificates' error for data without a PEM block.
var errNoCertificate = errors.New("no PEM certificate in it")

// parseCertificates reads every PEM block as a certificate: a block of
// another type, or one that does not parse, is an error rather than skipped,
// so a truncated or mixed-up file is noticed.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, not a CERTIFICATE", len(out)+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if bytes.Contains(data, []byte("-----BEGIN")) {
		return nil, fmt.Errorf("PEM block %d is truncated", len(out)+1)
	}
	if len(out) == 0 {
		return nil, errNoCertificate
	}
	return out, nil
}

// Loopback says whether a listener on addr (host:port) stays on loopback,
// where plaintext is allowed. An empty host (":9090") listens on every
// interface, and a host name other than localhost may resolve anywhere,
// so neither does.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
