package kafkaconn_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

const checkTimeout = 10 * time.Second

func textLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func newCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "t")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// check connects with the block and asks for metadata.
func check(t *testing.T, c kafkaconn.Config) error {
	t.Helper()
	opts, err := c.Options(nil)
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return kafkaconn.Check(context.Background(), cl, checkTimeout)
}

// roundTrip produces a record and reads it back over the block's
// connection: the options are the whole connection, also for the
// connections to the partition leader.
func roundTrip(t *testing.T, c kafkaconn.Config) {
	t.Helper()
	opts, err := c.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the record was never fetched")
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if fs.NumRecords() > 0 {
			return
		}
	}
}

func wantRefused(t *testing.T, err error, reason, says string) {
	t.Helper()
	var re *kafkaconn.RefusedError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Fatalf("kafkaconn.Check: %v, want a *kafkaconn.RefusedError for %s", err, reason)
	}
	if !strings.Contains(err.Error(), says) {
		t.Fatalf("kafkaconn.Check: %q does not say %q", err, says)
	}
}

func TestSASL(t *testing.T) {
	for _, mech := range []string{kafkaconn.MechanismPlain, kafkaconn.MechanismSCRAMSHA256, kafkaconn.MechanismSCRAMSHA512} {
		t.Run(mech, func(t *testing.T) {
			addrs := newCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "sluice", "right-password"))
			env := "KAFKACONN_TEST_" + strings.ReplaceAll(mech, "-", "_")
			c := kafkaconn.NewDefaultConfig()
			c.Brokers = addrs
			c.SASL = kafkaconn.SASLConfig{Mechanism: mech, Username: "sluice", PasswordEnv: env}

			t.Setenv(env, "right-password")
			if err := check(t, c); err != nil {
				t.Fatalf("right password: %v", err)
			}
			roundTrip(t, c)

			// kfake drops the connection on a wrong password where Kafka
			// answers SASL_AUTHENTICATION_FAILED (see
			// TestSASLRefusalNamesAuthentication): it fails, unnamed.
			t.Setenv(env, "wrong-password")
			if err := check(t, c); err == nil {
				t.Fatal("a wrong password connected")
			}
		})
	}
}

// TestSASLRefusalNamesAuthentication: Kafka answers a wrong password with
// SASL_AUTHENTICATION_FAILED; kafkaconn.Check makes that a refusal that names
// authentication, and the password is not in it.
func TestSASLRefusalNamesAuthentication(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(kafkaconn.MechanismPlain, "sluice", "right-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(kmsg.SASLAuthenticate.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		if strings.HasSuffix(string(auth.SASLAuthBytes), "\x00right-password") {
			return nil, nil, false
		}
		resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: Invalid username or password"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	t.Setenv("KAFKACONN_TEST_PASSWORD", "wrong-password")
	cfg := kafkaconn.NewDefaultConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismPlain, Username: "sluice", PasswordEnv: "KAFKACONN_TEST_PASSWORD"}
	err = check(t, cfg)
	wantRefused(t, err, kafkaconn.ReasonAuthentication, "authentication")
	if strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("the password is in the error: %v", err)
	}
	t.Setenv("KAFKACONN_TEST_PASSWORD", "right-password")
	if err := check(t, cfg); err != nil {
		t.Fatalf("right password: %v", err)
	}
}

// TestSASLPasswordFile: the file's trailing newline is not part of the
// password.
func TestSASLPasswordFile(t *testing.T) {
	addrs := newCluster(t, kfake.EnableSASL(), kfake.Superuser(kafkaconn.MechanismSCRAMSHA512, "sluice", "from-a-file"))
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := kafkaconn.NewDefaultConfig()
	c.Brokers = addrs
	c.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: "sluice", PasswordFile: file}
	if err := check(t, c); err != nil {
		t.Fatal(err)
	}
}

func TestTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	addrs := newCluster(t, kfake.TLS(ca.ServerTLS(t)))
	other := tlstest.NewCA(t, "other")
	base := kafkaconn.NewDefaultConfig()
	base.Brokers = addrs

	t.Run("trusted CA", func(t *testing.T) {
		c := base
		c.TLS.CAFile = ca.File(t) // implies enabled
		if err := check(t, c); err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c)
	})
	t.Run("server name override", func(t *testing.T) {
		c := base
		c.TLS = tlsfiles.ClientConfig{CAFile: ca.File(t), ServerName: "localhost"}
		if err := check(t, c); err != nil {
			t.Fatal(err)
		}
		c.TLS.ServerName = "kafka.elsewhere.test"
		wantRefused(t, check(t, c), kafkaconn.ReasonCertificate, "certificate")
	})
	t.Run("unknown CA", func(t *testing.T) {
		c := base
		c.TLS.CAFile = other.File(t)
		wantRefused(t, check(t, c), kafkaconn.ReasonCertificate, "certificate")
	})
	t.Run("system roots do not know a test CA", func(t *testing.T) {
		c := base
		c.TLS.Enabled = true
		wantRefused(t, check(t, c), kafkaconn.ReasonCertificate, "certificate")
	})
	t.Run("insecure skip verify connects and warns", func(t *testing.T) {
		c := base
		c.TLS = tlsfiles.ClientConfig{CAFile: other.File(t), InsecureSkipVerify: true}
		var logs strings.Builder
		opts, err := c.Options(textLogger(&logs))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := kafkaconn.Check(context.Background(), cl, checkTimeout); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "insecure_skip_verify") {
			t.Fatalf("no warning: %q", logs.String())
		}
	})
	t.Run("plaintext client", func(t *testing.T) {
		// Without TLS the client never gets an answer it understands:
		// not a refusal kafkaconn.Check can name, but no success either.
		if err := check(t, base); err == nil {
			t.Fatal("a plaintext client connected to a TLS listener")
		}
	})
}

func TestMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	srv := ca.ServerTLS(t)
	srv.ClientAuth, srv.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
	addrs := newCluster(t, kfake.TLS(srv))
	certFile, keyFile := ca.Client(t, tlstest.Identity{CommonName: "client"}).Files(t)
	other := tlstest.NewCA(t, "other")
	strangerCert, strangerKey := other.Client(t, tlstest.Identity{CommonName: "stranger"}).Files(t)

	c := kafkaconn.NewDefaultConfig()
	c.Brokers = addrs
	c.TLS = tlsfiles.ClientConfig{CAFile: ca.File(t), CertFile: certFile, KeyFile: keyFile}
	if err := check(t, c); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	roundTrip(t, c)

	c.TLS.CertFile, c.TLS.KeyFile = strangerCert, strangerKey
	wantRefused(t, check(t, c), kafkaconn.ReasonCertificate, "certificate")
	c.TLS.CertFile, c.TLS.KeyFile = "", ""
	wantRefused(t, check(t, c), kafkaconn.ReasonCertificate, "certificate")
}

// TestSASLOverTLS is the production shape: SCRAM-SHA-512 inside TLS, and
// no warning about credentials in clear.
func TestSASLOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	addrs := newCluster(t, kfake.TLS(ca.ServerTLS(t)), kfake.EnableSASL(),
		kfake.Superuser(kafkaconn.MechanismSCRAMSHA512, "sluice", "pw"))
	t.Setenv("KAFKACONN_TEST_PASSWORD", "pw")
	c := kafkaconn.NewDefaultConfig()
	c.Brokers = addrs
	c.TLS.CAFile = ca.File(t)
	c.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: "sluice", PasswordEnv: "KAFKACONN_TEST_PASSWORD"}
	var logs strings.Builder
	if _, err := c.Options(textLogger(&logs)); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Fatalf("warnings for a sound block: %s", logs.String())
	}
	roundTrip(t, c)
}

// TestCheckBrokerDown: a broker that does not answer is not a refusal,
// and kafkaconn.Check returns within its bound.
func TestCheckBrokerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := kafkaconn.NewDefaultConfig()
	c.Brokers = []string{addr}
	opts, err := c.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = kafkaconn.Check(context.Background(), cl, 2*time.Second)
	if err == nil || kafkaconn.Refused(err) != nil {
		t.Fatalf("kafkaconn.Check against a closed port: %v", err)
	}
}
