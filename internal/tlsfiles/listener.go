package tlsfiles

import (
	"errors"
	"strings"
)

// ListenerConfig is a listener's TLS block and whether plaintext beyond
// loopback is meant. The zero value, like NewDefaultListenerConfig, serves
// plaintext and is refused beyond loopback.
type ListenerConfig struct {
	ServerConfig `yaml:",inline"`
	// Insecure says that serving plaintext on an address other than
	// loopback is meant. It must be false when cert_file is set.
	Insecure bool `yaml:"insecure"`
}

// NewDefaultListenerConfig returns a block that serves plaintext.
func NewDefaultListenerConfig() ListenerConfig {
	return ListenerConfig{ServerConfig: NewDefaultServerConfig()}
}

// ValidateAt validates the block as ServerConfig.Validate does, and that
// insecure is not set with cert_file. A *ConfigError names the first wrong
// field by its path in the config file: a TLS field under tlsPath
// ("grpc_tls.cert_file"; tlsPath empty, the field alone), insecure as
// insecurePath. The two differ where a block keeps insecure beside its
// tls block rather than in it.
func (l ListenerConfig) ValidateAt(tlsPath, insecurePath string) error {
	if l.Insecure && l.Enabled() {
		certPath := join(tlsPath, "cert_file")
		if i := strings.LastIndexByte(insecurePath, '.'); i >= 0 {
			certPath = strings.TrimPrefix(certPath, insecurePath[:i+1])
		}
		return fieldErr(insecurePath, errors.New("must be false when "+certPath+" is set: the listener speaks TLS"))
	}
	return At(tlsPath, l.ServerConfig.Validate())
}

// PlaintextBeyondLoopback says whether a listener on addr would serve
// plaintext on an address other than loopback: start-up refuses that
// unless Insecure is set, and warns when it is. An empty addr (a listener
// that is off) never does.
func (l ListenerConfig) PlaintextBeyondLoopback(addr string) bool {
	return !l.Enabled() && addr != "" && !Loopback(addr)
}

// At puts a *ConfigError's field under path ("grpc_tls" and "cert_file"
// make "grpc_tls.cert_file"); other errors, and nil, are returned as they
// are.
func At(path string, err error) error {
	var ce *ConfigError
	if path == "" || !errors.As(err, &ce) {
		return err
	}
	return &ConfigError{Field: join(path, ce.Field), Err: ce.Err}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
