package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// clientTLS builds the client's tls.Config, or nil when TLS is off.
func (t TLSConfig) clientTLS() (*tls.Config, error) {
	if !t.on() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("loadgen: tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("loadgen: tls-ca: %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loadgen: tls-cert: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
