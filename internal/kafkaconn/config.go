package kafkaconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicehq/sluice/internal/tlsfiles"
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
	// TLS encrypts the connections and verifies the brokers (the brokers
	// are its servers). Default off. InsecureSkipVerify is for tests only;
	// Options logs a warning.
	TLS tlsfiles.ClientConfig `yaml:"tls"`
	// SASL authenticates the client. Default none.
	SASL SASLConfig `yaml:"sasl"`
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
	if l.tls, err = c.loadTLS(); err != nil {
		return l, err
	}
	if l.mechanism, err = c.SASL.load(); err != nil {
		return l, err
	}
	return l, nil
}

// loadTLS reads the tls block; its errors name their path under kafka.tls.
func (c Config) loadTLS() (*tls.Config, error) {
	cfg, err := c.TLS.Load()
	var ce *tlsfiles.ConfigError
	if errors.As(err, &ce) {
		return nil, bad("tls."+ce.Field, "%v", ce.Err)
	}
	return cfg, err
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
