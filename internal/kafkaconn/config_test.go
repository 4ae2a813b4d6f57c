package kafkaconn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

func TestValidate(t *testing.T) {
	ca := tlstest.NewCA(t, "valid")
	certFile, keyFile := ca.Client(t, tlstest.Identity{CommonName: "client"}).Files(t)
	_, otherKey := ca.Client(t, tlstest.Identity{CommonName: "other"}).Files(t)
	dir := t.TempDir()
	passFile := filepath.Join(dir, "pass")
	emptyFile := filepath.Join(dir, "empty")
	junk := filepath.Join(dir, "junk.pem")
	for path, body := range map[string]string{passFile: "s3cret\n", emptyFile: "\n", junk: "not a certificate\n"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.pem")
	t.Setenv("KAFKACONN_TEST_PASSWORD", "s3cret")
	t.Setenv("KAFKACONN_TEST_EMPTY", "")
	scram := func(c *kafkaconn.Config) {
		c.SASL = kafkaconn.SASLConfig{Mechanism: "SCRAM-SHA-512", Username: "sluice", PasswordEnv: "KAFKACONN_TEST_PASSWORD"}
	}

	for _, tc := range []struct {
		name   string
		modify func(*kafkaconn.Config)
		want   string // "" = valid
	}{
		{"defaults with brokers", func(*kafkaconn.Config) {}, ""},
		{"no brokers", func(c *kafkaconn.Config) { c.Brokers = nil }, "kafka.brokers: must name at least one broker"},
		{"empty broker", func(c *kafkaconn.Config) { c.Brokers = []string{"a:9092", " "} }, "kafka.brokers[1]: must not be empty"},
		{"no client id", func(c *kafkaconn.Config) { c.ClientID = "" }, "kafka.client_id: must not be empty"},
		{"zero dial timeout", func(c *kafkaconn.Config) { c.DialTimeout = 0 }, "kafka.dial_timeout: must be > 0"},

		{"tls with system roots", func(c *kafkaconn.Config) { c.TLS.Enabled = true }, ""},
		{"tls by ca file", func(c *kafkaconn.Config) { c.TLS.CAFile = ca.File(t) }, ""},
		{"mtls", func(c *kafkaconn.Config) {
			c.TLS = tlsfiles.ClientConfig{CAFile: ca.File(t), CertFile: certFile, KeyFile: keyFile}
		}, ""},
		{"unreadable ca file", func(c *kafkaconn.Config) { c.TLS.CAFile = missing }, "kafka.tls.ca_file: open " + missing},
		{"ca file without certificates", func(c *kafkaconn.Config) { c.TLS.CAFile = junk }, "kafka.tls.ca_file: " + junk + " holds no PEM certificate"},
		{"cert without key", func(c *kafkaconn.Config) { c.TLS.CertFile = certFile }, "kafka.tls.key_file: must be set with cert_file"},
		{"key without cert", func(c *kafkaconn.Config) { c.TLS.KeyFile = keyFile }, "kafka.tls.cert_file: must be set with key_file"},
		{"unreadable cert", func(c *kafkaconn.Config) { c.TLS.CertFile, c.TLS.KeyFile = missing, keyFile }, "kafka.tls.cert_file: open " + missing},
		{"unreadable key", func(c *kafkaconn.Config) { c.TLS.CertFile, c.TLS.KeyFile = certFile, missing }, "kafka.tls.key_file: open " + missing},
		{"cert that does not parse", func(c *kafkaconn.Config) { c.TLS.CertFile, c.TLS.KeyFile = junk, keyFile }, "kafka.tls.cert_file: "},
		{"key of another certificate", func(c *kafkaconn.Config) { c.TLS.CertFile, c.TLS.KeyFile = certFile, otherKey }, "kafka.tls.key_file: " + certFile + " and " + otherKey + ": tls: private key does not match public key"},
		{"server name without tls", func(c *kafkaconn.Config) { c.TLS.ServerName = "kafka" }, "kafka.tls.server_name: is set but TLS is off"},
		{"skip verify without tls", func(c *kafkaconn.Config) { c.TLS.InsecureSkipVerify = true }, "kafka.tls.insecure_skip_verify: is set but TLS is off"},

		{"scram by env", scram, ""},
		{"plain by file", func(c *kafkaconn.Config) {
			c.SASL = kafkaconn.SASLConfig{Mechanism: "PLAIN", Username: "sluice", PasswordFile: passFile}
		}, ""},
		{"mechanism in lower case", func(c *kafkaconn.Config) { scram(c); c.SASL.Mechanism = "scram-sha-256" }, ""},
		{"unknown mechanism", func(c *kafkaconn.Config) { scram(c); c.SASL.Mechanism = "GSSAPI" }, `kafka.sasl.mechanism: "GSSAPI" is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{"credentials without mechanism", func(c *kafkaconn.Config) { scram(c); c.SASL.Mechanism = "" }, "kafka.sasl.mechanism: must be set when"},
		{"no username", func(c *kafkaconn.Config) { scram(c); c.SASL.Username = "" }, "kafka.sasl.username: must be set with sasl.mechanism"},
		{"no password", func(c *kafkaconn.Config) { scram(c); c.SASL.PasswordEnv = "" }, "kafka.sasl.password_env: give password_env or password_file"},
		{"both passwords", func(c *kafkaconn.Config) { scram(c); c.SASL.PasswordFile = passFile }, "kafka.sasl.password_file: set with password_env: give exactly one"},
		{"unset env", func(c *kafkaconn.Config) { scram(c); c.SASL.PasswordEnv = "KAFKACONN_TEST_UNSET" }, "kafka.sasl.password_env: environment variable KAFKACONN_TEST_UNSET is empty or unset"},
		{"empty env", func(c *kafkaconn.Config) { scram(c); c.SASL.PasswordEnv = "KAFKACONN_TEST_EMPTY" }, "kafka.sasl.password_env: environment variable KAFKACONN_TEST_EMPTY is empty or unset"},
		{"unreadable password file", func(c *kafkaconn.Config) {
			scram(c)
			c.SASL.PasswordEnv, c.SASL.PasswordFile = "", missing
		}, "kafka.sasl.password_file: open " + missing},
		{"empty password file", func(c *kafkaconn.Config) {
			scram(c)
			c.SASL.PasswordEnv, c.SASL.PasswordFile = "", emptyFile
		}, "kafka.sasl.password_file: " + emptyFile + " is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkaconn.NewDefaultConfig()
			c.Brokers = []string{"127.0.0.1:9092"}
			tc.modify(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("Validate: %v\nwant prefix %q", err, tc.want)
			}
			if _, oerr := c.Options(nil); (oerr == nil) != (err == nil) {
				t.Fatalf("Options: %v, Validate: %v", oerr, err)
			}
		})
	}
}

func TestNewDefaultConfig(t *testing.T) {
	c := kafkaconn.NewDefaultConfig()
	if c.ClientID != "sluice" || c.DialTimeout != 5*time.Second || c.Brokers != nil || c.TLS.On() || c.SASL.Mechanism != "" {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestErrorsNeverCarryThePassword: the password, from the environment or a
// file, shows in no error and no log line, whether the block is refused
// (an unknown mechanism, an unreadable password file) or the broker
// refuses it (a wrong password).
func TestErrorsNeverCarryThePassword(t *testing.T) {
	const password = "hunter2-secret"
	t.Setenv("KAFKACONN_TEST_PASSWORD", password)
	dir := t.TempDir()
	passFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := newCluster(t, kfake.EnableSASL(), kfake.Superuser(kafkaconn.MechanismSCRAMSHA512, "u", "the-right-one"))
	byEnv := kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: "u", PasswordEnv: "KAFKACONN_TEST_PASSWORD"}
	byFile := kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: "u", PasswordFile: passFile}

	for _, tc := range []struct {
		name    string
		sasl    func() kafkaconn.SASLConfig
		check   bool   // connect and Check: the broker refuses
		warning string // a log line Options must write; "" when Options fails
	}{
		{"sasl in clear", func() kafkaconn.SASLConfig { s := byEnv; s.Mechanism = kafkaconn.MechanismPlain; return s }, false, "kafka.sasl without kafka.tls"},
		{"unknown mechanism, password from the environment", func() kafkaconn.SASLConfig { s := byEnv; s.Mechanism = "GSSAPI"; return s }, false, ""},
		{"unknown mechanism, password from a file", func() kafkaconn.SASLConfig { s := byFile; s.Mechanism = "GSSAPI"; return s }, false, ""},
		{"both passwords", func() kafkaconn.SASLConfig { s := byEnv; s.PasswordFile = passFile; return s }, false, ""},
		{"unreadable password file", func() kafkaconn.SASLConfig { s := byFile; s.PasswordFile = dir; return s }, false, ""},
		{"wrong password from the environment", func() kafkaconn.SASLConfig { return byEnv }, true, "kafka.sasl without kafka.tls"},
		{"wrong password from a file", func() kafkaconn.SASLConfig { return byFile }, true, "kafka.sasl without kafka.tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkaconn.NewDefaultConfig()
			c.Brokers = addrs
			c.SASL = tc.sasl()
			logs := &logtest.Buffer{}
			opts, err := c.Options(textLogger(logs))
			switch {
			case tc.warning == "" && err == nil:
				t.Fatal("Options accepted the block")
			case tc.warning != "" && err != nil:
				t.Fatalf("Options: %v", err)
			case tc.warning != "" && !strings.Contains(logs.String(), tc.warning):
				t.Fatalf("no warning %q: %q", tc.warning, logs.String())
			}
			if tc.check {
				cl, err2 := kgo.NewClient(append(opts, kgo.WithLogger(kgo.BasicLogger(logs, kgo.LogLevelDebug, nil)))...)
				if err2 != nil {
					t.Fatal(err2)
				}
				err = kafkaconn.Check(context.Background(), cl, checkTimeout)
				cl.Close()
				if err == nil {
					t.Fatal("Check connected with a wrong password")
				}
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the password is in the error: %v", err)
			}
			if strings.Contains(logs.String(), "hunter2") {
				t.Errorf("the password was logged: %s", logs.String())
			}
		})
	}
}
