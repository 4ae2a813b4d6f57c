package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/metadata"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Metadata keys that carry the API key. REST sends the same as HTTP
// headers: X-Api-Key, or Authorization: Bearer <key>.
const (
	apiKeyMetadata        = "x-api-key"
	authorizationMetadata = "authorization"
	traceparentMetadata   = "traceparent"
)

// source is an authenticated publisher with its allowance and bucket.
type source struct {
	name    string
	allowed map[string]bool // nil: every type
	limiter *rate.Limiter   // nil: unlimited
	// bytes is the bucket of bytes_rate; nil: unlimited.
	bytes *rate.Limiter
	// cfg is the source's config, whose rates SetReplicas divides.
	cfg SourceConfig
	// tenancy is the source's accounts in the gateway's budgets; nil for
	// a source a poller publishes as, which holds none.
	*tenancy
	// cloudEventTypes maps a CloudEvents type to a contract type
	// (cloudevents.types); cloudEventHeaders: records carry ce_* headers.
	cloudEventTypes   map[string]string
	cloudEventHeaders bool
	// allowUnknown are the contract types whose JSON may carry fields the
	// contract lacks (webhook.allow_unknown_fields); nil: none.
	allowUnknown map[string]bool
}

func (s *source) mayPublish(eventType string) bool {
	return s.allowed == nil || s.allowed[eventType]
}

// sources finds the source of an API key by the key's SHA-256, and of a
// client certificate by its names.
type sources struct {
	byHash map[[sha256.Size]byte]*source
	byCert map[string]*source // by parseCertMatch's form of a client_certs entry
	byName map[string]*source // for the webhook endpoints, whose path names the source
}

func newSources(cfgs []SourceConfig, maxRequestBytes int) *sources {
	s := &sources{byHash: map[[sha256.Size]byte]*source{}, byCert: map[string]*source{}, byName: map[string]*source{}}
	for _, c := range cfgs {
		src := &source{name: c.Name, cfg: c, cloudEventTypes: c.CloudEvents.Types, cloudEventHeaders: c.CloudEvents.KafkaHeaders}
		if c.Webhook != nil && len(c.Webhook.AllowUnknownFields) > 0 {
			src.allowUnknown = map[string]bool{}
			for _, t := range c.Webhook.AllowUnknownFields {
				src.allowUnknown[t] = true
			}
		}
		s.byName[c.Name] = src
		for _, t := range c.EventTypes {
			if t == "*" {
				src.allowed = nil
				break
			}
			if src.allowed == nil {
				src.allowed = map[string]bool{}
			}
			src.allowed[t] = true
		}
		if c.Rate > 0 {
			src.limiter = rate.NewLimiter(rate.Limit(c.Rate), c.Burst)
		}
		if c.BytesRate > 0 {
			src.bytes = rate.NewLimiter(rate.Limit(c.BytesRate), int(bytesBurst(c, maxRequestBytes)))
		}
		for _, h := range c.KeyHashes {
			var sum [sha256.Size]byte
			// Validate checked the form, so the decode cannot fail.
			if _, err := hex.Decode(sum[:], []byte(h)); err == nil {
				s.byHash[sum] = src
			}
		}
		for _, e := range c.ClientCerts {
			// Validate checked the entries too.
			if id, err := parseCertMatch(e); err == nil {
				s.byCert[id] = src
			}
		}
	}
	return s
}

// HashKey is how an API key is stored in the config: hex SHA-256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// authenticate finds the caller's source: by API key (incoming metadata)
// when one is sent, else by the client certificate the TLS layer verified
// against client_ca_file (the peer in ctx: gRPC's, or REST's by
// withPeerTLS). A key that is sent decides alone: an unknown key is
// UNAUTHENTICATED even when the connection's certificate would map to a
// source, so a caller never publishes as anyone but the key it sent. A
// verified certificate that maps to no source is UNAUTHENTICATED too. The key
// is hashed before the lookup, so the comparison never runs over the secret.
func (s *sources) authenticate(ctx context.Context) (*source, *Failure) {
	md, _ := metadata.FromIncomingContext(ctx)
	return s.authenticateKeys(ctx, first(md, apiKeyMetadata), first(md, authorizationMetadata))
}

// authenticateKeys is authenticate with the first x-api-key and
// Authorization values sent ("" for none) given; ctx carries the peer.
func (s *sources) authenticateKeys(ctx context.Context, key, auth string) (*source, *Failure) {
	if key == "" {
		if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			key = strings.TrimSpace(auth[7:])
		}
	}
	if key == "" {
		if leaf := verifiedLeaf(ctx); leaf != nil {
			return s.byCertificate(leaf)
		}
		if len(s.byCert) > 0 {
			return nil, &Failure{Reason: ingestv1.Reason_UNAUTHENTICATED, Message: "no API key and no verified client certificate: send x-api-key, Authorization: Bearer, or a client certificate"}
		}
		return nil, &Failure{Reason: ingestv1.Reason_UNAUTHENTICATED, Message: "no API key: send x-api-key or Authorization: Bearer"}
	}
	src, ok := s.byHash[sha256.Sum256([]byte(key))]
	if !ok {
		return nil, &Failure{Reason: ingestv1.Reason_UNAUTHENTICATED, Message: "unknown API key"}
	}
	return src, nil
}

// byCertificate is the source a verified client certificate names. One
// that names two sources (a DNS name of one, the common name of another)
// is refused rather than given to either.
func (s *sources) byCertificate(leaf *x509.Certificate) (*source, *Failure) {
	var found *source
	for _, id := range certIdentities(leaf) {
		src, ok := s.byCert[id]
		if !ok || src == found {
			continue
		}
		if found != nil {
			return nil, &Failure{Reason: ingestv1.Reason_UNAUTHENTICATED,
				Message: fmt.Sprintf("the client certificate (%s) names two sources, %q and %q", leaf.Subject, found.name, src.name)}
		}
		found = src
	}
	if found == nil {
		return nil, &Failure{Reason: ingestv1.Reason_UNAUTHENTICATED,
			Message: fmt.Sprintf("the client certificate (%s) is verified but not mapped to a source: list one of its names in a source's client_certs", leaf.Subject)}
	}
	return found, nil
}

// admit takes n events and size bytes from the source's buckets, or says
// how long until they would be there. Nothing is taken from either bucket
// when it refuses. paid is a reservation of the bytes taken before the
// body was read (prepay), or nil; it is given back when the events are
// refused.
func (s *source) admit(now time.Time, n, size int, paid *rate.Reservation) *Failure {
	var bytes *rate.Reservation
	if s.bytes != nil && paid == nil && size > 0 {
		r, f := s.reserveBytes(now, size)
		if f != nil {
			return f
		}
		bytes = r
	}
	if s.limiter == nil || n == 0 {
		return nil
	}
	r := s.limiter.ReserveN(now, n)
	if !r.OK() {
		cancelAt(bytes, now)
		cancelAt(paid, now)
		// n is over the burst; Validate keeps the burst >= a full batch.
		return &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE, Message: "batch is larger than the source's burst"}
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		cancelAt(bytes, now)
		cancelAt(paid, now)
		return &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: wait,
			Message: fmt.Sprintf("source %s is over its rate of %g events/s", s.name, float64(s.limiter.Limit()))}
	}
	return nil
}

// reserveBytes takes size bytes from the bytes_rate bucket, or refuses
// RATE_LIMITED with how long until they would be there, taking nothing.
func (s *source) reserveBytes(now time.Time, size int) (*rate.Reservation, *Failure) {
	r := s.bytes.ReserveN(now, size)
	if !r.OK() {
		// size is over the burst, which SetReplicas and Validate keep at
		// max_request_bytes or more: a request can pass once decoded
		// larger only through decompression, which that bounds too.
		return nil, &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE,
			Message: fmt.Sprintf("%d bytes is larger than source %s's bytes_burst of %d", size, s.name, s.bytes.Burst())}
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return nil, &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: wait,
			Message: fmt.Sprintf("source %s is over its bytes_rate of %g bytes/s", s.name, float64(s.bytes.Limit()))}
	}
	return r, nil
}

// prepay takes a body's bytes from the bytes_rate bucket before it is
// read, when its size is known; nil, nil when the source has no bytes_rate.
func (s *source) prepay(now time.Time, size int64) (*rate.Reservation, *Failure) {
	if s.bytes == nil || size <= 0 {
		return nil, nil
	}
	return s.reserveBytes(now, int(min(size, math.MaxInt32)))
}

func cancelAt(r *rate.Reservation, now time.Time) {
	if r != nil {
		r.CancelAt(now)
	}
}

// bytesBurst is c's bytes_burst, or its default: a second of bytes_rate,
// or max_request_bytes if that is more.
func bytesBurst(c SourceConfig, maxRequestBytes int) int64 {
	if c.BytesBurst > 0 {
		return c.BytesBurst
	}
	return max(int64(c.BytesRate), int64(maxRequestBytes))
}

// SetReplicas divides every source's events/s and bytes/s by n, the
// gateways that share the sources' traffic (n < 1 counts as 1), so that
// together they enforce what each source is configured for. A burst is
// divided too, but never below what one full request needs
// (limits.max_events_per_request events, limits.max_request_bytes bytes).
// Tokens a bucket holds beyond its new burst are dropped.
func (s *Service) SetReplicas(n int) {
	n = max(n, 1)
	s.replicasMu.Lock()
	defer s.replicasMu.Unlock()
	if s.replicas == n {
		return
	}
	s.replicas = n
	now := s.now()
	l := s.cfg.Limits
	for _, src := range s.sources.byName {
		c := src.cfg
		if src.limiter != nil {
			src.limiter.SetLimitAt(now, rate.Limit(c.Rate/float64(n)))
			src.limiter.SetBurstAt(now, max(c.Burst/n, l.MaxEventsPerRequest))
		}
		if src.bytes != nil {
			src.bytes.SetLimitAt(now, rate.Limit(c.BytesRate/float64(n)))
			src.bytes.SetBurstAt(now, int(max(bytesBurst(c, l.MaxRequestBytes)/int64(n), int64(l.MaxRequestBytes))))
		}
	}
	s.log.Info("per-source rates divided among the gateways", "replicas", n)
}

// first is the first value of key in md (a lower-case key) or in an
// http.Header (a canonical one), or "".
func first[M ~map[string][]string](md M, key string) string {
	if v := md[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
