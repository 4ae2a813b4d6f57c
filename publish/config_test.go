package publish

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/kafkaconn"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		// The connection block is checked first, with its field paths.
		{"no brokers", func(c *Config) { c.Brokers = nil }, "kafka.brokers: must name at least one broker"},
		{"empty broker", func(c *Config) { c.Brokers = []string{"a:9092", ""} }, "kafka.brokers[1]: must not be empty"},
		{"no client id", func(c *Config) { c.ClientID = "" }, "kafka.client_id: must not be empty"},
		{"sasl without user", func(c *Config) { c.SASL.Mechanism = "PLAIN" }, "kafka.sasl.username: must be set with sasl.mechanism"},
		{"zero delivery timeout", func(c *Config) { c.DeliveryTimeout = 0 }, "kafka.delivery_timeout: must be > 0"},
		{"short delivery timeout", func(c *Config) { c.DeliveryTimeout = 500 * time.Millisecond }, "kafka.delivery_timeout: must be at least 1s (franz-go's minimum), got 500ms"},
		{"zero linger", func(c *Config) { c.Linger = 0 }, ""},
		{"negative linger", func(c *Config) { c.Linger = -1 }, "kafka.linger: must be >= 0"},
		{"long linger", func(c *Config) { c.Linger = time.Hour }, "kafka.linger: must be at most 1m0s, got 1h0m0s"},
		{"zero buffered records", func(c *Config) { c.MaxBufferedRecords = 0 }, "kafka.max_buffered_records: must be > 0"},
		{"small batch", func(c *Config) { c.BatchMaxBytes = 511 }, "kafka.batch_max_bytes: must be between 512 and 104857600, got 511"},
		{"large batch", func(c *Config) { c.BatchMaxBytes = 1 << 30 }, "kafka.batch_max_bytes: must be between 512 and 104857600, got 1073741824"},
		{"zero buffered bytes", func(c *Config) { c.MaxBufferedBytes = 0 }, "kafka.max_buffered_bytes: must be > 0"},
		{"buffer smaller than a batch", func(c *Config) { c.MaxBufferedBytes = 1 << 10 }, "kafka.max_buffered_bytes: must be >= batch_max_bytes (1048576) so that a full batch can be buffered, got 1024"},
		{"zero dial timeout", func(c *Config) { c.DialTimeout = 0 }, "kafka.dial_timeout: must be > 0"},
		{"zero retry after", func(c *Config) { c.RetryAfter = 0 }, "kafka.retry_after: must be > 0"},
		{"unknown compression", func(c *Config) { c.Compression = "brotli" }, `kafka.compression: must be one of "none", "snappy", "lz4", "zstd", "gzip", got "brotli"`},
		{"empty compression", func(c *Config) { c.Compression = "" }, `kafka.compression: must be one of "none", "snappy", "lz4", "zstd", "gzip", got ""`},
		{"none", func(c *Config) { c.Compression = "none" }, ""},
		{"snappy", func(c *Config) { c.Compression = "snappy" }, ""},
		{"zstd", func(c *Config) { c.Compression = "zstd" }, ""},
		{"gzip", func(c *Config) { c.Compression = "gzip" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.Brokers = []string{"localhost:9092"}
			tc.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Validate: got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewDefaultConfig(t *testing.T) {
	want := Config{
		Config:             kafkaconn.NewDefaultConfig(),
		DeliveryTimeout:    10 * time.Second,
		Linger:             0,
		MaxBufferedRecords: 100000,
		MaxBufferedBytes:   256 << 20,
		BatchMaxBytes:      1 << 20,
		Compression:        "lz4",
		RetryAfter:         time.Second,
	}
	got := NewDefaultConfig()
	if got.Brokers != nil {
		t.Errorf("default Brokers = %v, want none", got.Brokers)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NewDefaultConfig() = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err == nil {
		t.Error("defaults without Brokers validate")
	}
}
