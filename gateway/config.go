package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/share"
	"github.com/sluicehq/sluice/internal/tlsfiles"
)

// Config is the gateway's block of the sluice config. NewDefaultConfig holds
// every default; Validate names the first wrong field.
type Config struct {
	// GRPCAddr and HTTPAddr are the listen addresses.
	GRPCAddr string `yaml:"grpc_addr"`
	HTTPAddr string `yaml:"http_addr"`
	// GRPCTLS and HTTPTLS are the listeners' TLS; without cert_file a
	// listener serves plaintext.
	GRPCTLS tlsfiles.ListenerConfig `yaml:"grpc_tls"`
	HTTPTLS tlsfiles.ListenerConfig `yaml:"http_tls"`

	Limits  LimitsConfig   `yaml:"limits"`
	HTTP    HTTPConfig     `yaml:"http"`
	Dedup   DedupConfig    `yaml:"dedup"`
	Sources []SourceConfig `yaml:"-"`
	// Topics maps an event type to its Kafka topic; a type not listed goes to
	// "ingest.<type>" (record.TopicOf). It is not a key of the gateway
	// block: it is the deployment's one topic map, the config file's
	// top-level topics block, which the consumer reads too; cmd/sluice
	// passes it in.
	Topics map[string]string `yaml:"-"`
	// PublishTimeout bounds how long an event waits for Kafka's ack before
	// it is answered UNAVAILABLE; a caller's earlier deadline wins.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// UnavailableRetryAfter is the retry_after given with UNAVAILABLE.
	UnavailableRetryAfter time.Duration `yaml:"unavailable_retry_after"`
	// MemoryLimit bounds the gateway's resident memory (RSS) in bytes; 0
	// sets no bound. The sluice binary gives the Go runtime a soft limit of
	// RuntimeMemoryLimit, below this by what the runtime does not count
	// (the mapped binary, pages not yet returned), and the config check
	// refuses a dedup window that would take more than a quarter of it.
	MemoryLimit int64 `yaml:"memory_limit"`
}

// LimitsConfig bounds what one request may carry.
type LimitsConfig struct {
	// MaxEventBytes bounds one event's payload (binary or JSON text), and
	// its protobuf binary form once a JSON payload is transcoded.
	MaxEventBytes int `yaml:"max_event_bytes"`
	// MaxEventsPerRequest bounds the events of one request or stream batch.
	MaxEventsPerRequest int `yaml:"max_events_per_request"`
	// MaxRequestBytes bounds a request body (REST) or message (gRPC). Both
	// are refused BATCH_TOO_LARGE without being read: REST from its
	// Content-Length (or when a chunked body passes it), gRPC from its
	// message's length prefix. A compressed body or message is bounded by
	// it once decompressed too: DECOMPRESSED_TOO_LARGE.
	MaxRequestBytes int `yaml:"max_request_bytes"`
	// RequestMemoryBytes bounds the memory of the requests the gateway
	// holds at once, across REST, gRPC and streams: from before a body or
	// message is read until its answer is written. A request is charged
	// twice its size and 64 KiB (its bytes, their decoded events and its
	// answer); one that cannot get its charge within MaxQueueWait is
	// refused UNAVAILABLE with Retry-After, unread. Half of it is for
	// requests (REST, unary gRPC), half for PublishStream batches, so that
	// neither can starve the other. Before a gRPC message
	// arrives its size is not known, so the charge of a request of
	// MaxRequestBytes is taken and the rest handed back once it is in: a
	// PublishStream waiting for its next batch holds that much. While a
	// gRPC message is decoded it takes up to half as much again (see
	// requestCost), so with MemoryLimit this may be at most a third of
	// it. 0 means a quarter of MemoryLimit, or 256 MiB when that is not
	// set. Each half is shared among the sources (ReservedShare): a gRPC
	// call is charged a request of MaxRequestBytes before its message
	// arrives, so a source's guarantee holds as many of its calls at once
	// as it holds that charge.
	RequestMemoryBytes int64 `yaml:"request_memory_bytes"`
	// MaxDepth bounds the nesting of a payload (JSON and protobuf).
	MaxDepth int `yaml:"max_depth"`
	// MaxEventAge and MaxEventFuture are the occurred_at skew window around
	// the gateway's clock.
	MaxEventAge    time.Duration `yaml:"max_event_age"`
	MaxEventFuture time.Duration `yaml:"max_event_future"`
	// MaxConcurrentStreams bounds the gRPC streams of one connection; the
	// transport refuses a stream past it (REFUSED_STREAM) before sluice
	// sees it.
	MaxConcurrentStreams uint32 `yaml:"max_concurrent_streams"`
	// MaxStreams bounds the authenticated streams open across connections:
	// PublishStream, and health or reflection calls that carry a valid
	// credential. Past it a new one is refused at its headers with
	// UNAVAILABLE and RetryInfo, counted in sluice_streams_refused_total.
	// A PublishStream without a valid credential is refused
	// UNAUTHENTICATED first; a health or reflection call without one is
	// counted in UnauthenticatedStreams instead, never here. The slots
	// are shared among the sources (ReservedShare): a source past its
	// share while slots are left is refused RATE_LIMITED.
	MaxStreams int `yaml:"max_streams"`
	// UnauthenticatedStreams bounds the gRPC calls and streams of callers
	// without a valid credential (health, reflection, methods the server
	// does not serve) open across connections: a share of their own,
	// apart from every bound an authenticated caller takes a place in.
	// Long-lived ones (health Watch, reflection) may hold at most half of
	// it, so a health Check without a key is answered while they are at
	// their bound. Past it a new one is refused at its headers with
	// UNAVAILABLE and RetryInfo, counted in
	// sluice_unauthenticated_streams_refused_total. At least 2.
	UnauthenticatedStreams int `yaml:"unauthenticated_streams"`
	// StreamWindow is how many batches of one PublishStream may be in flight
	// before the gateway stops reading the stream.
	StreamWindow int `yaml:"stream_window"`
	// StreamWindowBytes bounds the memory one PublishStream's batches in
	// flight hold (charged as RequestMemoryBytes counts them); the stream is
	// not read while the next batch could pass it.
	StreamWindowBytes int64 `yaml:"stream_window_bytes"`
	// StreamIdleTimeout ends a PublishStream that makes no progress for
	// this long: no batch arrives and no answer is sent. It is ended with
	// UNAVAILABLE and RetryInfo, so the client opens a new one when it has
	// events; a stream whose client stops reading its answers is ended the
	// same way, and the memory of its batches is freed.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// MaxViolationsPerEvent and MaxViolationsPerResponse bound the field
	// violations listed in answers; the message of a rejection with more
	// says how many were left out.
	MaxViolationsPerEvent    int `yaml:"max_violations_per_event"`
	MaxViolationsPerResponse int `yaml:"max_violations_per_response"`
	// CheckingEvents bounds the events being decoded and validated at once,
	// across every request: the CPU-bound part of a request. A request
	// waits for room in turn; one that cannot get it within MaxQueueWait
	// (or half the time its deadline leaves) is refused UNAVAILABLE with
	// Retry-After at once, instead of answering after the caller gave up.
	// At least MaxEventsPerRequest.
	CheckingEvents int `yaml:"checking_events"`
	// MaxQueueWait bounds a request's wait for its turn to be checked.
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
	// ReceivingRequests bounds the gRPC Publish calls whose request is
	// still arriving, across connections. Past it a new call is refused
	// UNAVAILABLE with Retry-After at its headers, before its body is read.
	// Only authenticated calls count: an unauthenticated one is refused
	// UNAUTHENTICATED at its headers and never takes a place. The places
	// are shared among the sources (ReservedShare): a source past its
	// share while places are left is refused RATE_LIMITED.
	ReceivingRequests int `yaml:"receiving_requests"`
	// ReceiveTimeout bounds how long a gRPC Publish call's message may take
	// to arrive after its headers. A call still without it then is cut off
	// with DEADLINE_EXCEEDED and its receiving place freed, counted in
	// sluice_receive_timeouts_total; a call's own earlier deadline wins.
	ReceiveTimeout time.Duration `yaml:"receive_timeout"`
	// MaxHeaderListBytes bounds the headers (metadata) of a gRPC call, as
	// HTTP/2 counts them. The transport resets a stream over it before
	// sluice sees it; gRPC clients check it before they send.
	MaxHeaderListBytes int `yaml:"max_header_list_bytes"`
	// MaxConnectionAge bounds how long a gRPC connection lives: past it
	// (with a little jitter) the server sends GOAWAY, so clients reconnect
	// and spread over the gateways behind a load balancer. Calls in flight
	// get MaxConnectionAgeGrace to finish before the connection is closed.
	MaxConnectionAge      time.Duration `yaml:"max_connection_age"`
	MaxConnectionAgeGrace time.Duration `yaml:"max_connection_age_grace"`
	// ReservedShare is the fraction of request memory, the receiving gate
	// (receiving_requests), the stream slots (max_streams) and the spool
	// that is split among the sources by their share, as guarantees: no
	// other source can hold a source's guarantee. The rest is lent to any
	// source that has used its own, and comes back as its holders finish.
	// A single source may hold everything. A source refused because the
	// room left is another's guarantee is RATE_LIMITED; one refused
	// because nothing is left, UNAVAILABLE.
	ReservedShare float64 `yaml:"reserved_share"`
}

// HTTPConfig holds the REST server's timeouts.
type HTTPConfig struct {
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	MaxHeaderBytes    int           `yaml:"max_header_bytes"`
	// OpenAPI serves the REST API's description, built from the loaded
	// contracts, at GET /openapi.json and a page of it at GET /docs,
	// without authentication.
	OpenAPI bool `yaml:"openapi"`
}

// DedupConfig bounds the dedup window.
type DedupConfig struct {
	// Window is how long an accepted (source, event id) answers DUPLICATE.
	// Zero turns deduplication off.
	Window time.Duration `yaml:"window"`
	// MaxEntries bounds the ids remembered. When it is reached the oldest id
	// is forgotten early and counted in sluice_dedup_evictions_total.
	MaxEntries int `yaml:"max_entries"`
}

// SourceConfig is one source that may publish. A source has API keys,
// client certificates, or both.
type SourceConfig struct {
	Name string `yaml:"name"`
	// KeyHashes are hex SHA-256 digests of the source's API keys; the keys
	// themselves are never stored.
	KeyHashes []string `yaml:"key_hashes"`
	// ClientCerts identify the source by its client certificate: a
	// certificate verified against a listener's client_ca_file that has
	// any of these is the source. Each entry is one of "dns:<SAN>",
	// "uri:<SAN>", "email:<SAN>", "cn:<subject common name>" or
	// "subject:<the whole subject, RFC 2253>" (CN=checkout,O=Shop), matched
	// exactly (DNS names and email domains without regard to case;
	// wildcards are not expanded). An entry names one source only.
	ClientCerts []string `yaml:"client_certs"`
	// EventTypes the source may publish; "*" allows every loaded type.
	EventTypes []string `yaml:"event_types"`
	// Rate is the source's sustained events per second; Burst its bucket.
	// Rate 0 means unlimited.
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
	// BytesRate is the source's sustained request bytes per second, counted
	// as the gateway reads them once decompressed (a REST body, a gRPC
	// message); BytesBurst its bucket, 0 for a second of BytesRate or
	// limits.max_request_bytes if that is more. BytesRate 0 means
	// unlimited. An uncompressed REST body with a Content-Length is
	// checked before it is read.
	BytesRate  float64 `yaml:"bytes_rate"`
	BytesBurst int64   `yaml:"bytes_burst"`
	// MaxRequests bounds the source's requests held at once (REST,
	// CloudEvents, webhooks, gRPC Publish), from before the body is read
	// to the answer; 0 leaves only its shares to bound them. Its streams'
	// batches are bounded by MaxStreams and limits.stream_window instead.
	MaxRequests int `yaml:"max_requests"`
	// MaxStreams bounds the source's authenticated streams open at once;
	// 0 leaves only its share of limits.max_streams to bound them.
	MaxStreams int `yaml:"max_streams"`
	// Share is the source's weight in the guaranteed part
	// (limits.reserved_share) of request memory, the receiving gate, the
	// stream slots and the spool; 0 means 1.
	Share float64 `yaml:"share"`
	// Webhook, when set, serves the source's signed deliveries at POST
	// /v1/webhooks/<name> (webhooks.go). A source may have keys or client
	// certificates besides, for /v1/events.
	Webhook *WebhookConfig `yaml:"webhook"`
	// CloudEvents is how the source's CloudEvents (POST /v1/cloudevents,
	// or a webhook of format cloudevents) become events.
	CloudEvents CloudEventsConfig `yaml:"cloudevents"`
}

// NewDefaultConfig returns the defaults; Sources is empty.
func NewDefaultConfig() Config {
	return Config{
		GRPCAddr: "127.0.0.1:9090",
		HTTPAddr: "127.0.0.1:8080",
		GRPCTLS:  tlsfiles.NewDefaultListenerConfig(),
		HTTPTLS:  tlsfiles.NewDefaultListenerConfig(),
		Limits: LimitsConfig{
			MaxEventBytes:          256 << 10,
			MaxEventsPerRequest:    500,
			MaxRequestBytes:        4 << 20,
			MaxDepth:               32,
			MaxEventAge:            7 * 24 * time.Hour,
			MaxEventFuture:         5 * time.Minute,
			MaxConcurrentStreams:   100,
			MaxStreams:             1000,
			UnauthenticatedStreams: 16,
			StreamWindow:           4,
			StreamWindowBytes:      32 << 20,
			StreamIdleTimeout:      time.Minute,

			MaxViolationsPerEvent:    20,
			MaxViolationsPerResponse: 1000,
			CheckingEvents:           2000,
			MaxQueueWait:             time.Second,
			ReceivingRequests:        64,

			ReceiveTimeout:        10 * time.Second,
			MaxHeaderListBytes:    16 << 10,
			MaxConnectionAge:      30 * time.Minute,
			MaxConnectionAgeGrace: time.Minute,
			ReservedShare:         0.5,
		},
		HTTP: HTTPConfig{
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			OpenAPI:           true,
		},
		Dedup: DedupConfig{
			Window:     10 * time.Minute,
			MaxEntries: 1_000_000,
		},
		PublishTimeout:        10 * time.Second,
		UnavailableRetryAfter: time.Second,
	}
}

// Validate reports the first field that is out of range, by its name.
func (c Config) Validate() error {
	l := c.Limits
	switch {
	case c.GRPCAddr == "":
		return fieldErr("grpc_addr", "must be set")
	case c.HTTPAddr == "":
		return fieldErr("http_addr", "must be set")
	case l.MaxEventBytes <= 0:
		return fieldErr("limits.max_event_bytes", "must be > 0")
	case l.MaxEventsPerRequest <= 0:
		return fieldErr("limits.max_events_per_request", "must be > 0")
	case l.MaxRequestBytes < l.MaxEventBytes:
		return fieldErr("limits.max_request_bytes", "must be >= limits.max_event_bytes")
	case l.MaxDepth < 1 || l.MaxDepth > 100:
		return fieldErr("limits.max_depth", "must be in [1, 100]")
	case l.MaxEventAge <= 0:
		return fieldErr("limits.max_event_age", "must be > 0")
	case l.MaxEventFuture < 0:
		return fieldErr("limits.max_event_future", "must be >= 0")
	case l.MaxConcurrentStreams == 0:
		return fieldErr("limits.max_concurrent_streams", "must be > 0")
	case l.StreamWindow < 1 || l.StreamWindow > 64:
		return fieldErr("limits.stream_window", "must be in [1, 64]")
	case l.StreamWindowBytes < requestCost(l.MaxRequestBytes):
		return fieldErr("limits.stream_window_bytes", fmt.Sprintf("must be >= %d (what one request of limits.max_request_bytes is charged), or no batch could pass", requestCost(l.MaxRequestBytes)))
	case l.StreamIdleTimeout <= c.PublishTimeout:
		return fieldErr("limits.stream_idle_timeout", "must be > publish_timeout, or a batch waiting on Kafka would end its stream")
	case l.MaxViolationsPerEvent < 1:
		return fieldErr("limits.max_violations_per_event", "must be >= 1")
	case l.MaxViolationsPerResponse < l.MaxViolationsPerEvent:
		return fieldErr("limits.max_violations_per_response", "must be >= limits.max_violations_per_event")
	case l.CheckingEvents < l.MaxEventsPerRequest:
		return fieldErr("limits.checking_events", "must be >= limits.max_events_per_request, or a full batch could never be checked")
	case l.MaxQueueWait <= 0:
		return fieldErr("limits.max_queue_wait", "must be > 0")
	case l.ReceivingRequests < 1:
		return fieldErr("limits.receiving_requests", "must be >= 1")
	case l.MaxStreams < 1:
		return fieldErr("limits.max_streams", "must be >= 1")
	case l.UnauthenticatedStreams < 2:
		return fieldErr("limits.unauthenticated_streams", "must be >= 2 (long-lived streams hold at most half, so a health Check always has room)")
	case l.ReceiveTimeout <= 0:
		return fieldErr("limits.receive_timeout", "must be > 0")
	case l.MaxHeaderListBytes < minHeaderListBytes || l.MaxHeaderListBytes > 1<<20:
		return fieldErr("limits.max_header_list_bytes", fmt.Sprintf("must be in [%d, %d]", minHeaderListBytes, 1<<20))
	case l.MaxConnectionAge <= 0:
		return fieldErr("limits.max_connection_age", "must be > 0")
	case l.MaxConnectionAgeGrace <= 0:
		return fieldErr("limits.max_connection_age_grace", "must be > 0")
	case c.HTTP.ReadHeaderTimeout <= 0:
		return fieldErr("http.read_header_timeout", "must be > 0")
	case c.HTTP.ReadTimeout <= 0:
		return fieldErr("http.read_timeout", "must be > 0")
	case c.HTTP.WriteTimeout <= c.PublishTimeout:
		return fieldErr("http.write_timeout", "must be > publish_timeout, or answers are cut off")
	case c.HTTP.IdleTimeout <= 0:
		return fieldErr("http.idle_timeout", "must be > 0")
	case c.HTTP.MaxHeaderBytes < 4096:
		return fieldErr("http.max_header_bytes", "must be >= 4096")
	case c.Dedup.Window < 0:
		return fieldErr("dedup.window", "must be >= 0 (0 turns dedup off)")
	case c.Dedup.Window > 0 && c.Dedup.MaxEntries < dedupShards:
		return fieldErr("dedup.max_entries", fmt.Sprintf("must be >= %d", dedupShards))
	case c.Dedup.Window > 0 && int64(c.Dedup.MaxEntries)/dedupShards > maxDedupShardEntries:
		return fieldErr("dedup.max_entries", fmt.Sprintf("must be <= %d", int64(dedupShards*maxDedupShardEntries)))
	case c.PublishTimeout <= 0:
		return fieldErr("publish_timeout", "must be > 0")
	case c.UnavailableRetryAfter <= 0:
		return fieldErr("unavailable_retry_after", "must be > 0")
	case c.MemoryLimit < 0:
		return fieldErr("memory_limit", "must be >= 0 (0 sets no limit)")
	case c.MemoryLimit > 0 && c.MemoryLimit < minMemoryLimit:
		return fieldErr("memory_limit", fmt.Sprintf("must be 0 (no bound) or >= %d MiB", minMemoryLimit>>20))
	case c.MemoryLimit > 0 && c.Dedup.Window > 0 && int64(c.Dedup.MaxEntries)*dedupBytesPerEntry > c.MemoryLimit/4:
		return fieldErr("dedup.max_entries", fmt.Sprintf("%d ids take about %d MiB, more than a quarter of memory_limit; lower it or raise memory_limit",
			c.Dedup.MaxEntries, int64(c.Dedup.MaxEntries)*dedupBytesPerEntry>>20))
	case l.RequestMemoryBytes < 0:
		return fieldErr("limits.request_memory_bytes", "must be >= 0 (0: a quarter of memory_limit, or 256 MiB)")
	case c.RequestMemory()/2 < requestCost(l.MaxRequestBytes):
		return fieldErr("limits.request_memory_bytes", fmt.Sprintf("%d is less than twice what one request of limits.max_request_bytes is charged (%d): each half must hold one", c.RequestMemory(), requestCost(l.MaxRequestBytes)))
	case c.MemoryLimit > 0 && c.RequestMemory() > c.MemoryLimit/3:
		return fieldErr("limits.request_memory_bytes", "must be at most a third of memory_limit (a gRPC message being decoded takes up to half as much again as it is charged)")
	case !(l.ReservedShare >= 0 && l.ReservedShare <= 1):
		return fieldErr("limits.reserved_share", "must be in [0, 1]")
	case len(c.Sources) == 0:
		return fieldErr("sources", "at least one source is needed")
	}
	if err := c.GRPCTLS.ValidateAt("grpc_tls", "grpc_tls.insecure"); err != nil {
		return tlsFieldErr(err)
	}
	if err := c.HTTPTLS.ValidateAt("http_tls", "http_tls.insecure"); err != nil {
		return tlsFieldErr(err)
	}
	names := map[string]bool{}
	hashes := map[string]string{}
	certs := map[string]string{}
	for i, s := range c.Sources {
		at := fmt.Sprintf("sources[%d]", i)
		switch {
		case s.Name == "":
			return fieldErr(at+".name", "must be set")
		case names[s.Name]:
			return fieldErr(at+".name", fmt.Sprintf("%q is used twice", s.Name))
		case len(s.KeyHashes) == 0 && len(s.ClientCerts) == 0 && s.Webhook == nil:
			return fieldErr(at+".key_hashes", "at least one key hash (or client_certs entry, or a webhook block) is needed")
		case len(s.ClientCerts) > 0 && !c.GRPCTLS.VerifiesClients() && !c.HTTPTLS.VerifiesClients():
			return fieldErr(at+".client_certs", "no listener verifies client certificates: set client_ca_file and client_auth request or require in grpc_tls or http_tls")
		case len(s.EventTypes) == 0:
			return fieldErr(at+".event_types", `list the types the source may publish, or "*"`)
		case s.Rate < 0:
			return fieldErr(at+".rate", "must be >= 0")
		case s.Rate > 0 && s.Burst < l.MaxEventsPerRequest:
			return fieldErr(at+".burst", "must be >= limits.max_events_per_request, or a full batch could never pass")
		case !(s.BytesRate >= 0) || s.BytesRate > maxBytesRate:
			return fieldErr(at+".bytes_rate", fmt.Sprintf("must be in [0, %d] (0: unlimited)", int64(maxBytesRate)))
		case s.BytesBurst < 0:
			return fieldErr(at+".bytes_burst", "must be >= 0")
		case s.BytesBurst > 0 && s.BytesBurst < int64(l.MaxRequestBytes):
			return fieldErr(at+".bytes_burst", "must be 0 or >= limits.max_request_bytes, or a full request could never pass")
		case s.MaxRequests < 0:
			return fieldErr(at+".max_requests", "must be >= 0 (0: only the source's shares bound it)")
		case s.MaxStreams < 0:
			return fieldErr(at+".max_streams", "must be >= 0 (0: only the source's share bounds it)")
		case !(s.Share >= 0) || s.Share > 1e6:
			return fieldErr(at+".share", "must be in [0, 1e6] (0: 1)")
		}
		names[s.Name] = true
		if s.Webhook != nil {
			if err := s.Webhook.validate(at + ".webhook"); err != nil {
				return err
			}
			if !validWebhookPathName(s.Name) {
				return fieldErr(at+".name", "a source with a webhook block is served at "+webhookPath+"<name>: letters, digits, '.', '_' and '-' only")
			}
		}
		for j, h := range s.KeyHashes {
			if !isSHA256Hex(h) {
				return fieldErr(fmt.Sprintf("%s.key_hashes[%d]", at, j), "must be 64 lower-case hex digits (sha256 of the key)")
			}
			if other, ok := hashes[h]; ok {
				return fieldErr(fmt.Sprintf("%s.key_hashes[%d]", at, j), fmt.Sprintf("the same key is also given to source %q", other))
			}
			hashes[h] = s.Name
		}
		for j, e := range s.ClientCerts {
			field := fmt.Sprintf("%s.client_certs[%d]", at, j)
			id, err := parseCertMatch(e)
			if err != nil {
				return fieldErr(field, err.Error())
			}
			if other, ok := certs[id]; ok && other == s.Name {
				return fieldErr(field, fmt.Sprintf("%q is listed twice", e))
			} else if ok {
				return fieldErr(field, fmt.Sprintf("%q is also given to source %q", e, other))
			}
			certs[id] = s.Name
		}
	}
	return c.validateShares()
}

// maxBytesRate bounds bytes_rate (1 TiB/s) so that a second of it is a
// bucket an int holds.
const maxBytesRate = 1 << 40

// minHeaderListBytes leaves room for gRPC's own headers, an API key and a
// traceparent.
const minHeaderListBytes = 1024

// PlaintextExposed lists the listeners, by their address field, that would
// serve plaintext on an address other than loopback without insecure being
// set. An address without a host (":9090") listens on every interface.
func (c Config) PlaintextExposed() []string {
	var out []string
	for _, l := range []struct {
		field, addr string
		tls         tlsfiles.ListenerConfig
	}{{"grpc_addr", c.GRPCAddr, c.GRPCTLS}, {"http_addr", c.HTTPAddr, c.HTTPTLS}} {
		if !l.tls.Insecure && l.tls.PlaintextBeyondLoopback(l.addr) {
			out = append(out, l.field)
		}
	}
	return out
}

// minMemoryLimit is the smallest memory_limit the gateway runs in.
const minMemoryLimit = 128 << 20

// RuntimeMemoryLimit is the soft limit for the Go runtime
// (runtime/debug.SetMemoryLimit) that keeps the process's RSS under
// MemoryLimit: a tenth, and at least 48 MiB, is left for the mapped binary
// and memory the runtime has freed but not yet returned. 0 when MemoryLimit
// sets no bound.
func (c Config) RuntimeMemoryLimit() int64 {
	if c.MemoryLimit <= 0 {
		return 0
	}
	return c.MemoryLimit - max(c.MemoryLimit/10, 48<<20)
}

// RequestMemory is Limits.RequestMemoryBytes, or its default when 0.
func (c Config) RequestMemory() int64 {
	switch {
	case c.Limits.RequestMemoryBytes > 0:
		return c.Limits.RequestMemoryBytes
	case c.MemoryLimit > 0:
		return c.MemoryLimit / 4
	}
	return 256 << 20
}

// ConfigError names a config field and what is wrong with it.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "gateway: " + e.Field + ": " + e.Reason }

func fieldErr(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }

// tlsFieldErr gives a tlsfiles.ConfigError, whose Field is already the
// path in the gateway block, as the gateway's own.
func tlsFieldErr(err error) error {
	var ce *tlsfiles.ConfigError
	if errors.As(err, &ce) {
		return fieldErr(ce.Field, ce.Err.Error())
	}
	return err
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// weight is the source's Share, or 1 when it is not set.
func (s SourceConfig) weight() float64 {
	if s.Share > 0 {
		return s.Share
	}
	return 1
}

// SourceShares are the sources' weights (share, 1 when not set) by name,
// as share.New takes them, for every budget split among the sources with
// Limits.ReservedShare: the spool's too.
func (c Config) SourceShares() map[string]float64 {
	w := make(map[string]float64, len(c.Sources))
	for _, s := range c.Sources {
		w[s.Name] = s.weight()
	}
	return w
}

// validateShares checks that every source can hold one full request in
// each half of request memory: its guarantee and the shared remainder.
// With one source that is the whole half; with several, reserved_share
// takes room from the remainder.
func (c Config) validateShares() error {
	half := c.RequestMemory() / 2
	cost := requestCost(c.Limits.MaxRequestBytes)
	p, err := share.New(half, c.Limits.ReservedShare, c.SourceShares())
	if err != nil {
		return fieldErr("limits.reserved_share", err.Error())
	}
	for i, s := range c.Sources {
		if t := p.Tenant(s.Name); t.Guarantee()+p.Shared() < cost {
			return fieldErr(fmt.Sprintf("sources[%d].share", i), fmt.Sprintf(
				"its guarantee and the shared remainder of half of limits.request_memory_bytes are %d bytes, less than one request of limits.max_request_bytes is charged (%d): lower limits.reserved_share, raise the share or limits.request_memory_bytes",
				t.Guarantee()+p.Shared(), cost))
		}
	}
	return nil
}
