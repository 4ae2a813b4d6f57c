package publish

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
)

// Config is the producer's configuration block, the kafka: block of the
// config file: the connection (brokers, client_id, dial_timeout, tls,
// sasl) and the producer's settings. Start from NewDefaultConfig and set
// Brokers.
type Config struct {
	// Config is the connection every Kafka client of sluice uses.
	kafkaconn.Config `yaml:",inline"`
	// DeliveryTimeout bounds how long a record may wait in the client before
	// it is failed (kgo.RecordDeliveryTimeout). A record already sent in a
	// request is not failed until the broker answers, so that idempotence
	// holds. Default 10s; franz-go's minimum is 1s.
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
	// Linger is how long a partition waits for more records before a batch
	// is sent (kgo.ProducerLinger). Default 0: a record is sent at once
	// unless the broker already has 5 produce requests in flight
	// (idempotent produce allows no more; the first request waits alone
	// for its answer), and records that arrive meanwhile go together in
	// the next request, so batches grow with load by themselves. A linger
	// above 0 makes a lone record wait that long for company: fewer,
	// larger requests for less CPU per event, at that much latency.
	Linger time.Duration `yaml:"linger"`
	// MaxBufferedRecords bounds the records buffered in the client. Past it
	// Publish refuses records at once with ErrBufferFull. Default 100000.
	MaxBufferedRecords int `yaml:"max_buffered_records"`
	// MaxBufferedBytes bounds the bytes (keys, values and headers) buffered
	// in the client. Past it Publish refuses records at once with
	// ErrBufferFull. Default 256 MiB.
	MaxBufferedBytes int64 `yaml:"max_buffered_bytes"`
	// BatchMaxBytes bounds an uncompressed record batch
	// (kgo.ProducerBatchMaxBytes); a record larger than this fails with a
	// permanent MESSAGE_TOO_LARGE error. It must not exceed the
	// max.message.bytes of any topic produced to. Default 1 MiB.
	BatchMaxBytes int32 `yaml:"batch_max_bytes"`
	// Compression is the batch codec: "none", "snappy", "lz4", "zstd" or
	// "gzip". Default "lz4".
	Compression string `yaml:"compression"`
	// RetryAfter is the wait suggested to callers when a record failed
	// retryably (ProduceError.RetryAfter). Default 1s.
	RetryAfter time.Duration `yaml:"retry_after"`
}

// Limits enforced by Validate. The batch bound is franz-go's: at least 512
// bytes, and no more than a broker request may carry (100 MiB, franz-go's
// default BrokerMaxWriteBytes and Kafka's socket.request.max.bytes).
const (
	minDeliveryTimeout = time.Second
	maxLinger          = time.Minute
	minBatchMaxBytes   = 512
	maxBatchMaxBytes   = 100 << 20
)

// NewDefaultConfig returns the defaults documented on Config. Brokers is empty
// and must be set.
func NewDefaultConfig() Config {
	return Config{
		Config:             kafkaconn.NewDefaultConfig(),
		DeliveryTimeout:    10 * time.Second,
		Linger:             0,
		MaxBufferedRecords: 100_000,
		MaxBufferedBytes:   256 << 20,
		BatchMaxBytes:      1 << 20,
		Compression:        "lz4",
		RetryAfter:         time.Second,
	}
}

// Validate reports the first invalid field as "kafka.<path>: <why>", by
// its YAML path: the connection's as kafkaconn.Config.Validate does, the
// producer's (kafka.linger) the same way.
func (c Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	return c.validateProducer()
}

func (c Config) validateProducer() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("kafka.%s: "+format, append([]any{field}, args...)...)
	}
	switch {
	case c.DeliveryTimeout <= 0:
		return bad("delivery_timeout", "must be > 0")
	case c.DeliveryTimeout < minDeliveryTimeout:
		return bad("delivery_timeout", "must be at least %v (franz-go's minimum), got %v", minDeliveryTimeout, c.DeliveryTimeout)
	case c.Linger < 0:
		return bad("linger", "must be >= 0")
	case c.Linger > maxLinger:
		return bad("linger", "must be at most %v, got %v", maxLinger, c.Linger)
	case c.MaxBufferedRecords <= 0:
		return bad("max_buffered_records", "must be > 0")
	case c.BatchMaxBytes < minBatchMaxBytes || c.BatchMaxBytes > maxBatchMaxBytes:
		return bad("batch_max_bytes", "must be between %d and %d, got %d", minBatchMaxBytes, maxBatchMaxBytes, c.BatchMaxBytes)
	case c.MaxBufferedBytes <= 0:
		return bad("max_buffered_bytes", "must be > 0")
	case c.MaxBufferedBytes < int64(c.BatchMaxBytes):
		return bad("max_buffered_bytes", "must be >= batch_max_bytes (%d) so that a full batch can be buffered, got %d", c.BatchMaxBytes, c.MaxBufferedBytes)
	case c.MaxBufferedBytes > math.MaxInt-int64(c.BatchMaxBytes):
		return bad("max_buffered_bytes", "must be at most %d on this platform", math.MaxInt-int64(c.BatchMaxBytes))
	case c.RetryAfter <= 0:
		return bad("retry_after", "must be > 0")
	}
	if _, ok := compressionCodecs(c.Compression); !ok {
		return bad("compression", `must be one of "none", "snappy", "lz4", "zstd", "gzip", got %q`, c.Compression)
	}
	return nil
}

// compressionCodecs maps Config.Compression to franz-go's preference list.
// Every codec falls back to none for a broker that does not support it
// (zstd needs Kafka 2.1).
func compressionCodecs(name string) ([]kgo.CompressionCodec, bool) {
	var c kgo.CompressionCodec
	switch name {
	case "none":
		return []kgo.CompressionCodec{kgo.NoCompression()}, true
	case "snappy":
		c = kgo.SnappyCompression()
	case "lz4":
		c = kgo.Lz4Compression()
	case "zstd":
		c = kgo.ZstdCompression()
	case "gzip":
		c = kgo.GzipCompression()
	default:
		return nil, false
	}
	return []kgo.CompressionCodec{c, kgo.NoCompression()}, true
}
