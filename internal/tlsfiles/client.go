package tlsfiles

import (
	"crypto/tls"
	"errors"
)

// ClientConfig is a client's TLS block: what it trusts, the certificate it
// presents, the name it checks. The zero value speaks plaintext.
type ClientConfig struct {
	// Enabled turns TLS on; setting CAFile, CertFile or KeyFile does too.
	// Without CAFile the server is verified against the system roots.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the server's certificate.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's certificate and key (PEM), for
	// servers that ask for one (mTLS). Both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name checked in the server's certificate instead
	// of the host dialed.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate. For tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// On reports whether the connections use TLS.
func (c ClientConfig) On() bool {
	return c.Enabled || c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

// Validate names the first wrong field; it reads the files, as Load does.
func (c ClientConfig) Validate() error {
	_, err := c.Load()
	return err
}

// Load reads the files and returns the client's tls.Config, TLS 1.2 or
// newer; nil when TLS is off. The CA file is parsed as ServerConfig's
// files are: every PEM block a certificate, at least one. A *ConfigError
// names the wrong field ("ca_file", "key_file", …).
func (c ClientConfig) Load() (*tls.Config, error) {
	if !c.On() {
		switch {
		case c.ServerName != "":
			return nil, fieldErr("server_name", errors.New("is set but TLS is off (set enabled)"))
		case c.InsecureSkipVerify:
			return nil, fieldErr("insecure_skip_verify", errors.New("is set but TLS is off (set enabled)"))
		}
		return nil, nil
	}
	switch {
	case c.CertFile == "" && c.KeyFile != "":
		return nil, fieldErr("cert_file", errors.New("must be set with key_file"))
	case c.KeyFile == "" && c.CertFile != "":
		return nil, fieldErr("key_file", errors.New("must be set with cert_file"))
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" {
		pool, err := loadPool("ca_file", c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		pair, err := loadKeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
