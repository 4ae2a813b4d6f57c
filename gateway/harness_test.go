package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// Keys of the test sources.
const (
	keyAll        = "key-all"        // source "all": every type, unlimited
	keyRestricted = "key-restricted" // source "restricted": log lines only
	keySlow       = "key-slow"       // source "slow": 1 event/s, burst 10
)

const (
	typeOrder   = "examples.shop.v1.OrderPlaced"
	typeProfile = "examples.identity.v1.UserProfileUpdated"
	typeLog     = "examples.logs.v1.LogLine"
)

// clock is a settable clock for the skew window, rate limits and dedup.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a gateway on loopback ports publishing to an in-process Kafka.
type harness struct {
	t       testing.TB
	cluster *kfake.Cluster
	brokers []string
	srv     *gateway.Server
	svc     *gateway.Service
	client  ingestv1.IngestServiceClient
	conn    *grpc.ClientConn
	clock   *clock
	reg     *prometheus.Registry
	cfg     gateway.Config
	topics  map[string]string // event type -> topic

	admission *admission.Admission
	admin     *admin.Server // /metrics, /healthz, /readyz of this gateway
}

type harnessOpts struct {
	config    func(*gateway.Config)
	publisher func(real gateway.Admitter) gateway.Admitter
	// spool, when set, gives admission a spool; admission tunes it.
	spool     func(t testing.TB) *buffer.Spool
	admission func(*admission.Config)
	brokers   []string // publish here instead of the in-process Kafka
	// realKafka publishes to SLUICE_KAFKA_BROKERS, on topics of the test's
	// own, and skips the test when it is not set.
	realKafka bool
	// tracer, when set, is the tracer provider of the producer, admission
	// and the gateway.
	tracer trace.TracerProvider
	// service adds options to gateway.New.
	service []gateway.Option
	// server adds options to gateway.NewServer.
	server []gateway.ServerOption
	// readiness checks admission's readiness every few milliseconds.
	readiness bool
	// beforeStart runs between NewServer and Start.
	beforeStart func(*gateway.Server)
	// types are contract types of the examples image loaded beside
	// examples.Types (examples.StripeEventType).
	types []string
}

func testConfig() gateway.Config {
	cfg := gateway.NewDefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Limits.MaxEventBytes = 4096
	cfg.Limits.MaxEventsPerRequest = 10
	cfg.Limits.MaxRequestBytes = 64 << 10
	cfg.Limits.MaxDepth = 8
	cfg.Limits.StreamWindow = 2
	cfg.PublishTimeout = 10 * time.Second
	cfg.HTTP.WriteTimeout = 20 * time.Second
	cfg.Dedup.MaxEntries = 64 * 100
	cfg.Sources = []gateway.SourceConfig{
		{Name: "all", KeyHashes: []string{gateway.HashKey(keyAll)}, EventTypes: []string{"*"}},
		{Name: "restricted", KeyHashes: []string{gateway.HashKey(keyRestricted)}, EventTypes: []string{typeLog}},
		{Name: "slow", KeyHashes: []string{gateway.HashKey(keySlow)}, EventTypes: []string{"*"}, Rate: 1, Burst: 10},
	}
	return cfg
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, clock: &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}, reg: prometheus.NewRegistry()}
	types := append(slices.Clone(examples.Types), o.types...)
	registry, err := contract.Load(examples.Contracts, types, contract.WithMaxDepth(8))
	if err != nil {
		t.Fatal(err)
	}
	h.brokers = o.brokers
	h.topics = map[string]string{}
	for _, typ := range types {
		h.topics[typ] = record.EventTopic(typ)
	}
	if o.realKafka {
		h.brokers = kafkatest.Brokers(t)
		for _, typ := range types {
			h.topics[typ] = kafkatest.CreateTopic(t, h.brokers, 3, nil)
		}
	}
	if h.brokers == nil {
		var topics []string
		for _, typ := range types {
			topics = append(topics, record.EventTopic(typ))
		}
		h.cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.cluster.Close)
		h.brokers = h.cluster.ListenAddrs()
	}
	pcfg := publish.NewDefaultConfig()
	pcfg.Brokers = h.brokers
	pcfg.DeliveryTimeout = 5 * time.Second
	popts := []publish.Option{publish.WithLogger(slog.New(slog.DiscardHandler))}
	aopts := []admission.Option{admission.WithLogger(slog.New(slog.DiscardHandler)), admission.WithRegisterer(h.reg)}
	gopts := []gateway.Option{gateway.WithClock(h.clock.Now), gateway.WithRegisterer(h.reg)}
	if o.tracer != nil {
		popts = append(popts, publish.WithTracerProvider(o.tracer))
		aopts = append(aopts, admission.WithTracerProvider(o.tracer))
		gopts = append(gopts, gateway.WithTracerProvider(o.tracer))
	}
	producer, err := publish.NewProducer(pcfg, nil, popts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = producer.Close(ctx)
	})
	var spool *buffer.Spool
	if o.spool != nil {
		spool = o.spool(t)
	}
	acfg := admission.NewDefaultConfig()
	if o.admission != nil {
		o.admission(&acfg)
	}
	adm, err := admission.New(acfg, producer, spool, aopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	h.admission = adm
	var pub gateway.Admitter = adm
	if o.publisher != nil {
		pub = o.publisher(adm)
	}
	h.cfg = testConfig()
	if o.realKafka {
		h.cfg.Topics = h.topics
	}
	if o.config != nil {
		o.config(&h.cfg)
	}
	svc, err := gateway.New(h.cfg, gateway.Served(registry), pub, append(gopts, o.service...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	sopts := o.server
	if o.readiness {
		sopts = append(sopts, gateway.WithReadiness(adm.Ready), gateway.WithReadinessEvery(10*time.Millisecond, time.Second))
	}
	h.srv, err = gateway.NewServer(svc, sopts...)
	if err != nil {
		t.Fatal(err)
	}
	if o.beforeStart != nil {
		o.beforeStart(h.srv)
	}
	h.srv.Start()
	h.admin, err = admin.New(admin.Config{Addr: "127.0.0.1:0"}, h.reg,
		admin.WithReadiness(h.srv.Ready), admin.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h.admin.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.admin.Shutdown(ctx)
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	h.conn, err = grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.conn.Close() })
	h.client = ingestv1.NewIngestServiceClient(h.conn)
	return h
}

// ev is an event as a test writes it; rest and proto render it.
type ev struct {
	ID, Type, Key string
	At            time.Time
	JSON          []byte // payload as JSON; sent as "json" over gRPC
	Binary        []byte // payload as protobuf; gRPC only
	Attrs         map[string]string
}

func (e ev) rest() map[string]any {
	m := map[string]any{"id": e.ID, "type": e.Type}
	if !e.At.IsZero() {
		m["occurred_at"] = e.At.Format(time.RFC3339Nano)
	}
	if e.Key != "" {
		m["partition_key"] = e.Key
	}
	if e.JSON != nil {
		m["payload"] = json.RawMessage(e.JSON)
	}
	if e.Attrs != nil {
		m["attributes"] = e.Attrs
	}
	return m
}

func (e ev) proto() *ingestv1.Event {
	p := &ingestv1.Event{Id: e.ID, Type: e.Type, PartitionKey: e.Key, Attributes: e.Attrs}
	if !e.At.IsZero() {
		p.OccurredAt = timestamppb.New(e.At)
	}
	switch {
	case e.Binary != nil:
		p.Payload = &ingestv1.Event_Binary{Binary: e.Binary}
	case e.JSON != nil:
		p.Payload = &ingestv1.Event_Json{Json: string(e.JSON)}
	}
	return p
}

func restBody(events ...ev) []byte {
	list := make([]map[string]any, len(events))
	for i, e := range events {
		list[i] = e.rest()
	}
	b, err := json.Marshal(map[string]any{"events": list})
	if err != nil {
		panic(err)
	}
	return b
}

// postREST sends body to POST /v1/events with the API key (none when empty).
func (h *harness) postREST(key string, body []byte) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/events", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, out
}

func withKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
}

func (h *harness) publishGRPC(key string, events ...ev) (*ingestv1.PublishResponse, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(withKey(context.Background(), key), 15*time.Second)
	defer cancel()
	req := &ingestv1.PublishRequest{}
	for _, e := range events {
		req.Events = append(req.Events, e.proto())
	}
	return h.client.Publish(ctx, req)
}

// consume reads records of topic from the start until want have arrived or
// the deadline passes, and then reads briefly on to catch extra copies.
func (h *harness) consume(topic string, want int) []*kgo.Record {
	return h.consumeUntil(topic, func(recs []*kgo.Record, _ map[string]bool) bool { return len(recs) >= want })
}

// consumeIDs reads topic until every one of ids has arrived (copies and
// other ids may come too), or the deadline passes.
func (h *harness) consumeIDs(topic string, ids []string) []*kgo.Record {
	return h.consumeUntil(topic, func(_ []*kgo.Record, seen map[string]bool) bool {
		for _, id := range ids {
			if !seen[id] {
				return false
			}
		}
		return true
	})
}

func (h *harness) consumeUntil(topic string, done func([]*kgo.Record, map[string]bool) bool) []*kgo.Record {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ids := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	extra := time.Time{}
	for {
		if extra.IsZero() && done(out, ids) {
			extra = time.Now().Add(500 * time.Millisecond)
		}
		if time.Now().After(deadline) || (!extra.IsZero() && time.Now().After(extra)) {
			return out
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			ids[header(r, record.HeaderEventID)] = true
		})
	}
}

// header returns the value of a record header.
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// setJSON returns base with the value at a dotted path replaced (or
// deleted when value is nil).
func setJSON(t *testing.T, base []byte, path string, value any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(base, &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		cur = cur[p].(map[string]any)
	}
	last := parts[len(parts)-1]
	if value == nil {
		delete(cur, last)
	} else {
		cur[last] = value
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventually checks cond every few milliseconds until it holds, or fails
// the test at the deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, 20*time.Second, what, cond)
}
