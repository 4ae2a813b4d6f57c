package loadgen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// Target kinds.
const (
	TargetGRPC   = "grpc"   // sluice.ingest.v1.IngestService/Publish
	TargetStream = "stream" // sluice.ingest.v1.IngestService/PublishStream
	TargetREST   = "rest"   // POST /v1/events
	TargetDirect = "direct" // franz-go straight to the broker
	TargetClient = "client" // sluice's Go client (package client), over Publish or PublishStream
)

// Payload encodings.
const (
	EncodingJSON   = "json"
	EncodingBinary = "binary"
)

// Config is one load generator run. NewDefaultConfig holds every default;
// Validate names the first wrong field.
type Config struct {
	// Target is grpc, stream, rest, client or direct.
	Target string
	// Addr is the gateway's gRPC address (grpc, stream, client), its REST base URL
	// or host:port (rest), or the comma-separated seed brokers (direct).
	Addr string
	// APIKey is sent as x-api-key (gRPC) or X-Api-Key (REST).
	APIKey string
	// EventType is one of the example contracts.
	EventType string
	// Encoding is the payload form: json or binary. REST sends json only.
	Encoding string
	// EventsPerRequest is the batch size of one request.
	EventsPerRequest int
	// EventBytes is the approximate size of one payload in its encoding;
	// a free-text field is padded to reach it. 0 sends the example as is.
	EventBytes int
	// Keys is the number of distinct partition keys, used in turn.
	Keys int
	// InvalidEvery makes every n-th event break a contract rule; 0: none.
	InvalidEvery int
	// Concurrency is the number of workers: requests in flight at most.
	Concurrency int
	// Rate, when > 0, runs an open loop of Rate requests per second, with
	// latency measured from each request's intended send time; 0 runs a
	// closed loop, each worker sending as soon as its last answer came.
	Rate float64
	// Requests and Events bound the run by count (0: no count bound);
	// Duration always bounds it. A run stops at whichever comes first.
	Requests int64
	Events   int64
	Duration time.Duration
	// Timeout bounds each request; a request unanswered by then is a timeout.
	Timeout time.Duration
	// Connections is the number of gRPC connections workers share. The
	// client target gives the client Addr this many times: one connection
	// per address, requests round robin over them.
	Connections int
	// ClientStream makes the client target's client use PublishStream
	// (client.UseStream) instead of Publish.
	ClientStream bool
	// Topic is where direct produces; empty: ingest.<EventType>.
	Topic string
	// Kafka is direct's connection (TLS, SASL); its brokers, when it
	// names none, are Addr's. Default: plaintext.
	Kafka kafkaconn.Config
	// RunID prefixes every event id; ids are RunID-<counter>.
	RunID string
	// TLS, when on, makes the grpc, stream, rest and client targets speak TLS to
	// the gateway (and present a client certificate when one is set). Its
	// flags: --tls, --tls-ca, --tls-cert, --tls-key, --tls-server-name;
	// ServerName empty checks the host of Addr.
	TLS tlsfiles.ClientConfig
}

// tlsFlags name the TLS block's fields by their flags.
var tlsFlags = map[string]string{
	"enabled":   "tls",
	"ca_file":   "tls-ca",
	"cert_file": "tls-cert",
	"key_file":  "tls-key",
	// --tls-server-name without TLS is not refused: clientTLS reads the
	// block only when TLS is on.
	"server_name": "tls-server-name",
}

// tlsFlag is the first TLS flag that is set, the one that turned TLS on.
func (c Config) tlsFlag() string {
	switch {
	case c.TLS.Enabled:
		return "tls"
	case c.TLS.CAFile != "":
		return "tls-ca"
	case c.TLS.CertFile != "":
		return "tls-cert"
	}
	return "tls-key"
}

// clientTLS builds the targets' tls.Config, or nil when TLS is off; its
// errors name the flag.
func (c Config) clientTLS() (*tls.Config, error) {
	if !c.TLS.On() {
		return nil, nil
	}
	tc, err := c.TLS.Load()
	var ce *tlsfiles.ConfigError
	if errors.As(err, &ce) {
		return nil, fieldErr(tlsFlags[ce.Field], ce.Err.Error())
	}
	return tc, err
}

// NewDefaultConfig returns the defaults: gRPC Publish of 100 binary log
// lines, 16 workers in a closed loop for at most 30 s.
func NewDefaultConfig() Config {
	return Config{
		Target:           TargetGRPC,
		Addr:             "127.0.0.1:9090",
		APIKey:           "sluice-demo-key",
		EventType:        TypeLogLine,
		Encoding:         EncodingBinary,
		EventsPerRequest: 100,
		Keys:             64,
		Concurrency:      16,
		Duration:         30 * time.Second,
		Timeout:          10 * time.Second,
		Connections:      1,
		Kafka:            kafkaconn.NewDefaultConfig(),
	}
}

// Validate reports the first field out of range, by its flag name.
func (c Config) Validate() error {
	switch {
	case !validTarget(c.Target):
		return fieldErr("target", fmt.Sprintf("%q is not grpc, stream, rest, client or direct", c.Target))
	case c.Addr == "":
		return fieldErr("addr", "must be set")
	case c.EventType != TypeOrderPlaced && c.EventType != TypeLogLine:
		return fieldErr("type", fmt.Sprintf("%q is not %s or %s", c.EventType, TypeOrderPlaced, TypeLogLine))
	case c.Encoding != EncodingJSON && c.Encoding != EncodingBinary:
		return fieldErr("encoding", fmt.Sprintf("%q is not json or binary", c.Encoding))
	case c.Target == TargetREST && c.Encoding != EncodingJSON:
		return fieldErr("encoding", "REST carries payloads as JSON only")
	case c.EventsPerRequest < 1:
		return fieldErr("events-per-request", "must be >= 1")
	case c.EventBytes < 0 || c.EventBytes > 1<<20:
		return fieldErr("event-bytes", "must be in [0, 1 MiB]")
	case c.Keys < 1:
		return fieldErr("keys", "must be >= 1")
	case c.InvalidEvery < 0:
		return fieldErr("invalid-every", "must be >= 0")
	case c.Concurrency < 1 || c.Concurrency > 1024:
		// Each worker owns a histogram of about 58 KiB.
		return fieldErr("concurrency", "must be in [1, 1024]")
	case c.Rate < 0:
		return fieldErr("rate", "must be >= 0 (0: closed loop)")
	case c.Requests < 0:
		return fieldErr("requests", "must be >= 0")
	case c.Events < 0:
		return fieldErr("events", "must be >= 0")
	case c.Duration <= 0:
		return fieldErr("duration", "must be > 0: every run is bounded in time")
	case c.Timeout <= 0:
		return fieldErr("timeout", "must be > 0")
	case c.Connections < 1 || c.Connections > 256:
		return fieldErr("connections", "must be in [1, 256]")
	case (c.TLS.CertFile == "") != (c.TLS.KeyFile == ""):
		return fieldErr("tls-cert", "a client certificate needs both --tls-cert and --tls-key")
	case c.TLS.On() && c.Target == TargetDirect:
		return fieldErr(c.tlsFlag(), "direct produces to Kafka over plaintext; TLS flags apply to grpc, stream, rest and client")
	case c.ClientStream && c.Target != TargetClient:
		return fieldErr("client-stream", fmt.Sprintf("applies to --target client only, not %s (use --target stream)", c.Target))
	}
	return nil
}

func validTarget(t string) bool {
	switch t {
	case TargetGRPC, TargetStream, TargetREST, TargetClient, TargetDirect:
		return true
	}
	return false
}

// maxRequests is the count bound in requests; -1 when there is none.
func (c Config) maxRequests() int64 {
	n := int64(-1)
	if c.Requests > 0 {
		n = c.Requests
	}
	if c.Events > 0 {
		byEvents := (c.Events + int64(c.EventsPerRequest) - 1) / int64(c.EventsPerRequest)
		if n < 0 || byEvents < n {
			n = byEvents
		}
	}
	return n
}

// batchSize is the number of events of request slot i: EventsPerRequest,
// less in the last request when Events does not divide evenly.
func (c Config) batchSize(slot int64) int {
	if c.Events <= 0 {
		return c.EventsPerRequest
	}
	left := c.Events - slot*int64(c.EventsPerRequest)
	return int(min(left, int64(c.EventsPerRequest)))
}
