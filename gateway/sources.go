package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
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

func newSources(cfgs []SourceConfig) *sources {
	s := &sources{byHash: map[[sha256.Size]byte]*source{}, byCert: map[string]*source{}, byName: map[string]*source{}}
	for _, c := range cfgs {
		src := &source{name: c.Name, cloudEventTypes: c.CloudEvents.Types, cloudEventHeaders: c.CloudEvents.KafkaHeaders}
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

// admit takes n events from the source's bucket, or says how long until
// they would be there. Nothing is taken from the bucket when it refuses.
func (s *source) admit(now time.Time, n int) *Failure {
	if s.limiter == nil || n == 0 {
		return nil
	}
	r := s.limiter.ReserveN(now, n)
	if !r.OK() {
		// n is over the burst; Validate keeps the burst >= a full batch.
		return &Failure{Reason: ingestv1.Reason_BATCH_TOO_LARGE, Message: "batch is larger than the source's burst"}
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return &Failure{Reason: ingestv1.Reason_RATE_LIMITED, RetryAfter: wait, Message: "source " + s.name + " is over its rate"}
	}
	return nil
}

// first is the first value of key in md (a lower-case key) or in an
// http.Header (a canonical one), or "".
func first[M ~map[string][]string](md M, key string) string {
	if v := md[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
