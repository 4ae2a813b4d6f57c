package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Config is the connection block, the kafka: block's connection keys.
// Start from NewDefaultConfig and set Brokers.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string `yaml:"brokers"`
	// ClientID is the Kafka client id, visible in broker logs and quotas.
	// Default "sluice".
	ClientID string `yaml:"client_id"`
	// DialTimeout bounds opening a connection to a broker, the TLS
	// handshake included. Default 5s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// TLS encrypts the connections and verifies the brokers. Default off.
	TLS TLSConfig `yaml:"tls"`
	// SASL authenticates the client. Default none.
	SASL SASLConfig `yaml:"sasl"`
}

// TLSConfig is the kafka.tls block.
type TLSConfig struct {
	// Enabled turns TLS on; setting CAFile, CertFile or KeyFile does too.
	// Without CAFile the brokers are verified against the system roots.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's certificate and key (PEM), for
	// brokers that ask for one (mTLS). Both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name checked in the brokers' certificates instead
	// of the host each broker is dialed by.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate. For tests only;
	// Options logs a warning.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// On reports whether the connections use TLS.
func (t TLSConfig) On() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != ""
}

// SASLConfig is the kafka.sasl block.
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: no SASL.
	Mechanism string `yaml:"mechanism"`
	// Username is the SASL user. Required with a mechanism.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env"`
	// PasswordFile is a file holding the password; a trailing newline is
	// trimmed. Exactly one of PasswordEnv and PasswordFile.
	PasswordFile string `yaml:"password_file"`
}

// The mechanisms, as Kafka names them.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// NewDefaultConfig returns the defaults documented on Config. Brokers is
// empty and must be set.
func NewDefaultConfig() Config {
	return Config{ClientID: "sluice", DialTimeout: 5 * time.Second}
}

// Validate reports the first invalid field as "kafka.<path>: <why>". It
// reads the files and the environment variable the block names.
func (c Config) Validate() error {
	_, err := c.load()
	return err
}

// Options validates the block and returns the client options of the
// connection: seed brokers, client id, dial timeout, TLS and SASL. The
// password is read now. Components append their own options; log gets the
// warnings of a weak block (insecure_skip_verify, SASL without TLS) and
// may be nil.
func (c Config) Options(log *slog.Logger) ([]kgo.Opt, error) {
	l, err := c.load()
	if err != nil {
		return nil, err
	}
	if log != nil {
		if c.TLS.InsecureSkipVerify {
			log.Warn("kafka.tls.insecure_skip_verify is set: broker certificates are not verified, anyone on the path can pose as the cluster")
		}
		if l.mechanism != nil && l.tls == nil {
			log.Warn("kafka.sasl without kafka.tls: the SASL exchange travels unencrypted", "mechanism", l.mechanism.Name())
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
		kgo.DialTimeout(c.DialTimeout),
	}
	if l.tls != nil {
		// Cloned on every dial; an empty ServerName becomes the host
		// dialed.
		opts = append(opts, kgo.DialTLSConfig(l.tls))
	}
	if l.mechanism != nil {
		opts = append(opts, kgo.SASL(l.mechanism))
	}
	return opts, nil
}

// loaded is what the block points at, read.
type loaded struct {
	tls       *tls.Config // nil: plaintext
	mechanism sasl.Mechanism
}

func bad(field, format string, args ...any) error {
	return fmt.Errorf("kafka.%s: "+format, append([]any{field}, args...)...)
}

func (c Config) load() (loaded, error) {
	var l loaded
	if len(c.Brokers) == 0 {
		return l, bad("brokers", "must name at least one broker")
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			return l, bad(fmt.Sprintf("brokers[%d]", i), "must not be empty")
		}
	}
	switch {
	case c.ClientID == "":
		return l, bad("client_id", "must not be empty")
	case c.DialTimeout <= 0:
		return l, bad("dial_timeout", "must be > 0")
	}
	var err error
	if l.tls, err = c.TLS.load(); err != nil {
		return l, err
	}
	if l.mechanism, err = c.SASL.load(); err != nil {
		return l, err
	}
	return l, nil
}

func (t TLSConfig) load() (*tls.Config, error) {
	if !t.On() {
		switch {
		case t.ServerName != "":
			return nil, bad("tls.server_name", "is set but TLS is off (set kafka.tls.enabled)")
		case t.InsecureSkipVerify:
			return nil, bad("tls.insecure_skip_verify", "is set but TLS is off (set kafka.tls.enabled)")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, bad("tls.ca_file", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad("tls.ca_file", "%s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.CertFile == "":
		return nil, bad("tls.cert_file", "must be set with key_file")
	case t.KeyFile == "":
		return nil, bad("tls.key_file", "must be set with cert_file")
	default:
		certPEM, err := os.ReadFile(t.CertFile)
		if err != nil {
			return nil, bad("tls.cert_file", "%v", err)
		}
		keyPEM, err := os.ReadFile(t.KeyFile)
		if err != nil {
			return nil, bad("tls.key_file", "%v", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			field := "tls.key_file"
			if strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "does not match") {
				field = "tls.cert_file"
			}
			return nil, bad(field, "%s and %s: %v", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (s SASLConfig) load() (sasl.Mechanism, error) {
	if s.Mechanism == "" {
		if s.Username != "" || s.PasswordEnv != "" || s.PasswordFile != "" {
			return nil, bad("sasl.mechanism", "must be set when sasl.username or a password is (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return nil, nil
	}
	mech := strings.ToUpper(s.Mechanism)
	switch mech {
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
	default:
		return nil, bad("sasl.mechanism", "%q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
	}
	if s.Username == "" {
		return nil, bad("sasl.username", "must be set with sasl.mechanism")
	}
	var pass string
	switch {
	case s.PasswordEnv != "" && s.PasswordFile != "":
		return nil, bad("sasl.password_file", "set with password_env: give exactly one")
	case s.PasswordEnv != "":
		if pass = os.Getenv(s.PasswordEnv); pass == "" {
			return nil, bad("sasl.password_env", "environment variable %s is empty or unset", s.PasswordEnv)
		}
	case s.PasswordFile != "":
		raw, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return nil, bad("sasl.password_file", "%v", err)
		}
		if pass = strings.TrimRight(string(raw), "\r\n"); pass == "" {
			return nil, bad("sasl.password_file", "%s is empty", s.PasswordFile)
		}
	default:
		return nil, bad("sasl.password_env", "give password_env or password_file with sasl.mechanism")
	}
	switch mech {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case MechanismSCRAMSHA256:
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
}
