package webhook_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/webhook"
)

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	stripe, standard, github := secretFile(t, stripeSecret), secretFile(t, standardSecret), secretFile(t, githubSecret)
	notBase64 := secretFile(t, "whsec_"+githubSecret)
	bare := secretFile(t, "whsec_")
	empty := secretFile(t, "")
	t.Setenv("SLUICE_WEBHOOK_TEST_SECRET", stripeSecret)
	t.Setenv("SLUICE_WEBHOOK_TEST_EMPTY", "")
	t.Setenv("SLUICE_WEBHOOK_TEST_NOT_BASE64", "whsec_"+githubSecret)
	with := func(scheme string, change func(*webhook.Config)) webhook.Config {
		c := webhook.NewDefaultConfig()
		c.Scheme = scheme
		c.SecretFiles = []string{stripe}
		if scheme == webhook.SchemeStandard {
			c.SecretFiles = []string{standard}
		}
		if scheme == webhook.SchemeHMAC {
			c.HMAC.Header = "X-Signature"
		}
		if change != nil {
			change(&c)
		}
		return c
	}
	for _, c := range []struct {
		name  string
		cfg   webhook.Config
		field string // "" when valid
	}{
		{"stripe", with(webhook.SchemeStripe, nil), ""},
		{"standard", with(webhook.SchemeStandard, nil), ""},
		{"github", with(webhook.SchemeGitHub, func(c *webhook.Config) { c.SecretFiles = []string{github} }), ""},
		{"shopify", with(webhook.SchemeShopify, nil), ""},
		{"hmac", with(webhook.SchemeHMAC, nil), ""},
		{"hmac, everything", with(webhook.SchemeHMAC, func(c *webhook.Config) {
			c.HMAC = webhook.HMACConfig{Header: "X-Sig", Prefix: "v0=", Algorithm: "sha512", Encoding: "base64", TimestampHeader: "X-Ts", SignedSeparator: ""}
		}), ""},
		{"an environment variable", with(webhook.SchemeStripe, func(c *webhook.Config) {
			c.SecretFiles, c.SecretEnv = nil, []string{"SLUICE_WEBHOOK_TEST_SECRET"}
		}), ""},
		{"rotation: four secrets", with(webhook.SchemeStripe, func(c *webhook.Config) {
			c.SecretFiles = append(c.SecretFiles, github, notBase64)
			c.SecretEnv = []string{"SLUICE_WEBHOOK_TEST_SECRET"}
		}), ""},
		{"a day's tolerance", with(webhook.SchemeStripe, func(c *webhook.Config) { c.Tolerance = 24 * time.Hour }), ""},

		{"no scheme", with("", nil), "scheme"},
		{"an unknown scheme", with("svix", nil), "scheme"},
		{"no secret", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = nil }), "secret_files"},
		{"five secrets", with(webhook.SchemeStripe, func(c *webhook.Config) {
			c.SecretFiles = append(c.SecretFiles, github, notBase64, standard)
			c.SecretEnv = []string{"SLUICE_WEBHOOK_TEST_SECRET"}
		}), "secret_files"},
		{"an empty file name", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = []string{stripe, ""} }), "secret_files[1]"},
		{"a file twice", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = []string{stripe, stripe} }), "secret_files[1]"},
		{"a missing file", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = []string{filepath.Join(dir, "missing")} }), "secret_files[0]"},
		{"a directory", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = []string{dir} }), "secret_files[0]"},
		{"an empty file", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretFiles = []string{empty} }), "secret_files[0]"},
		{"a standard secret that is not base64", with(webhook.SchemeStandard, func(c *webhook.Config) { c.SecretFiles = []string{standard, notBase64} }), "secret_files[1]"},
		{"a standard secret of whsec_ alone", with(webhook.SchemeStandard, func(c *webhook.Config) { c.SecretFiles = []string{bare} }), "secret_files[0]"},
		{"a standard secret from the environment that is not base64", with(webhook.SchemeStandard, func(c *webhook.Config) {
			c.SecretFiles, c.SecretEnv = nil, []string{"SLUICE_WEBHOOK_TEST_NOT_BASE64"}
		}), "secret_env[0]"},
		{"an empty variable", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretEnv = []string{"SLUICE_WEBHOOK_TEST_EMPTY"} }), "secret_env[0]"},
		{"an unset variable", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretEnv = []string{"SLUICE_WEBHOOK_TEST_UNSET_" + t.Name()} }), "secret_env[0]"},
		{"a variable name with =", with(webhook.SchemeStripe, func(c *webhook.Config) { c.SecretEnv = []string{"A=B"} }), "secret_env[0]"},
		{"a variable twice", with(webhook.SchemeStripe, func(c *webhook.Config) {
			c.SecretEnv = []string{"SLUICE_WEBHOOK_TEST_SECRET", "SLUICE_WEBHOOK_TEST_SECRET"}
		}), "secret_env[1]"},
		{"no tolerance", with(webhook.SchemeStripe, func(c *webhook.Config) { c.Tolerance = 0 }), "tolerance"},
		{"a negative tolerance", with(webhook.SchemeStripe, func(c *webhook.Config) { c.Tolerance = -time.Minute }), "tolerance"},
		{"over a day's tolerance", with(webhook.SchemeStripe, func(c *webhook.Config) { c.Tolerance = 24*time.Hour + time.Second }), "tolerance"},
		{"hmac.header for stripe", with(webhook.SchemeStripe, func(c *webhook.Config) { c.HMAC.Header = "X-Sig" }), "hmac.header"},
		{"hmac.prefix for github", with(webhook.SchemeGitHub, func(c *webhook.Config) { c.HMAC.Prefix = "sha256=" }), "hmac.prefix"},
		{"hmac.timestamp_header for standard", with(webhook.SchemeStandard, func(c *webhook.Config) { c.HMAC.TimestampHeader = "X-Ts" }), "hmac.timestamp_header"},
		{"hmac without a header", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Header = "" }), "hmac.header"},
		{"hmac with a header name that is not one", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Header = "X Signature" }), "hmac.header"},
		{"hmac with a prefix of a newline", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Prefix = "v1\n" }), "hmac.prefix"},
		{"hmac with a long prefix", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Prefix = strings.Repeat("p", 65) }), "hmac.prefix"},
		{"hmac with md5", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Algorithm = "md5" }), "hmac.algorithm"},
		{"hmac with no algorithm", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Algorithm = "" }), "hmac.algorithm"},
		{"hmac in base32", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.Encoding = "base32" }), "hmac.encoding"},
		{"hmac with a timestamp header that is not a name", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.TimestampHeader = "X:Ts" }), "hmac.timestamp_header"},
		{"hmac with the timestamp in the signature's header", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.TimestampHeader = "x-signature" }), "hmac.timestamp_header"},
		{"hmac with a long separator", with(webhook.SchemeHMAC, func(c *webhook.Config) { c.HMAC.SignedSeparator = strings.Repeat(".", 17) }), "hmac.signed_separator"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			_, newErr := webhook.New(c.cfg)
			for _, err := range []error{err, newErr} {
				var ce *webhook.ConfigError
				switch {
				case c.field == "" && err != nil:
					t.Fatal(err)
				case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
					t.Fatalf("%v, want an error naming %s", err, c.field)
				}
				if err != nil {
					for _, s := range allSecrets {
						if strings.Contains(err.Error(), s) {
							t.Fatalf("the error holds a secret: %v", err)
						}
					}
				}
			}
		})
	}
}

// TestDefaultConfig: the defaults are a five-minute window and, for hmac,
// sha256 in hex with "." before the body; a scheme and a secret are the
// operator's to give.
func TestDefaultConfig(t *testing.T) {
	c := webhook.NewDefaultConfig()
	if c.Tolerance != 5*time.Minute || c.HMAC.Algorithm != "sha256" || c.HMAC.Encoding != "hex" || c.HMAC.SignedSeparator != "." {
		t.Fatalf("%+v", c)
	}
	var ce *webhook.ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "scheme" {
		t.Fatalf("%v, want scheme", err)
	}
}
