package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/waitfor"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testEvent returns a distinct event per n, with nanosecond times, a
// binary value that is not UTF-8, and a JSON payload.
func testEvent(n int) Event {
	base := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	value := []byte{0x0a, 0xff, byte(n), 0x00, 0x80}
	traceID := fmt.Sprintf("4bf92f3577b34da6a3ce929d%08x", n)
	if n%4 == 3 {
		traceID = "" // a record without a traceparent
	}
	return Event{
		ID:                 fmt.Sprintf("evt-%04d", n),
		Type:               "orders.created",
		Source:             "shop-" + fmt.Sprint(n%3),
		Key:                []byte(fmt.Sprintf("customer-%d", n%5)),
		Value:              value,
		JSON:               []byte(fmt.Sprintf(`{"orderId":"o-%d","amount":%d,"tags":["a","b"]}`, n, n*10)),
		PayloadFingerprint: Fingerprint(value),
		OccurredAt:         base.Add(time.Duration(n) * time.Second),
		IngestedAt:         base.Add(time.Duration(n)*time.Second + 250*time.Millisecond),
		SchemaFingerprint:  "sha256:abc" + fmt.Sprint(n%2),
		Topic:              "ingest.orders.created",
		Partition:          int32(n % 4),
		Offset:             int64(1000 + n),
		TraceID:            traceID,
	}
}

// withPayload returns e carrying another payload, tag, under its identity.
func withPayload(e Event, tag string) Event {
	e.Value = append([]byte{0x0a, byte(len(tag))}, tag...)
	e.JSON = []byte(fmt.Sprintf(`{"orderId":%q}`, tag))
	e.PayloadFingerprint = Fingerprint(e.Value)
	return e
}

func testEvents(from, n int) []Event {
	out := make([]Event, n)
	for i := range out {
		out[i] = testEvent(from + i)
	}
	return out
}

// rowReader is what the contract test reads a sink back with.
type rowReader interface {
	Count(ctx context.Context) (int64, error)
	Get(ctx context.Context, source, id string) (Row, error)
}

// conflictReader is what the table sinks' conflicts are read back with.
type conflictReader interface {
	Conflicts(ctx context.Context, n int) ([]ConflictRecord, error)
}

// stores says which parts of an event a sink keeps and how exactly.
type stores struct {
	value     bool          // Value, Topic, KafkaPartition, KafkaOffset, WrittenAt
	precision time.Duration // of the stored times
}

// checkRow fails t unless row holds e as a sink with s stores it.
func checkRow(t *testing.T, s stores, e Event, row Row, written time.Time) {
	t.Helper()
	if row.EventID != e.ID || row.EventType != e.Type || row.Source != e.Source ||
		row.PartitionKey != string(e.Key) || row.SchemaFingerprint != e.SchemaFingerprint ||
		row.PayloadFingerprint != e.PayloadFingerprint {
		t.Errorf("row %q: envelope = %q %q %q %q %q, want %q %q %q %q %q", e.ID,
			row.EventType, row.Source, row.PartitionKey, row.SchemaFingerprint, row.PayloadFingerprint,
			e.Type, e.Source, e.Key, e.SchemaFingerprint, e.PayloadFingerprint)
	}
	for _, c := range [...]struct {
		name      string
		got, want time.Time
	}{{"occurred_at", row.OccurredAt, e.OccurredAt}, {"ingested_at", row.IngestedAt, e.IngestedAt}} {
		if !c.got.Equal(c.want.Truncate(s.precision)) {
			t.Errorf("row %q: %s = %v, want %v", e.ID, c.name, c.got, c.want.Truncate(s.precision))
		}
	}
	if !jsonEqual(t, row.Payload, e.JSON) {
		t.Errorf("row %q: payload = %s, want %s", e.ID, row.Payload, e.JSON)
	}
	if !s.value {
		return
	}
	if !bytes.Equal(row.Value, e.Value) || row.Topic != e.Topic || row.KafkaPartition != e.Partition || row.KafkaOffset != e.Offset {
		t.Errorf("row %q: value/topic/partition/offset = %x %q %d %d, want %x %q %d %d", e.ID,
			row.Value, row.Topic, row.KafkaPartition, row.KafkaOffset, e.Value, e.Topic, e.Partition, e.Offset)
	}
	if !row.WrittenAt.Equal(written.Truncate(s.precision)) {
		t.Errorf("row %q: written_at = %v, want %v", e.ID, row.WrittenAt, written)
	}
}

// jsonEqual compares two JSON texts by value; empty and null are equal.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if len(a) > 0 {
		if err := json.Unmarshal(a, &va); err != nil {
			t.Fatalf("stored payload %q: %v", a, err)
		}
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &vb); err != nil {
			t.Fatalf("event payload %q: %v", b, err)
		}
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

func openTestSQLite(t testing.TB, dir string, clock *testClock) *SQLite {
	t.Helper()
	cfg := NewDefaultConfig().SQLite
	cfg.Path = filepath.Join(dir, "events.db")
	s, err := OpenSQLite(context.Background(), cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// receiver is an HTTP sink's receiver as the protocol asks for: it stores
// each body and payload fingerprint under its Idempotency-Key, keeps the
// first, and answers with the fingerprint it holds.
type receiver struct {
	mu     sync.Mutex
	bodies map[string]received
	keys   []string // every POST's key, in arrival order
	header []http.Header
}

type received struct {
	env         httpEnvelope
	fingerprint string
}

func newReceiver() *receiver { return &receiver{bodies: map[string]received{}} }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(HeaderIdempotencyKey)
	fp := r.Header.Get(HeaderPayloadFingerprint)
	body, err := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || key == "" || fp == "" || r.Header.Get("Content-Type") != "application/json" || err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var env httpEnvelope
	if err := json.Unmarshal(body, &env); err != nil || IdempotencyKey(env.Source, env.ID) != key {
		http.Error(w, "bad body", http.StatusUnprocessableEntity)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.keys = append(rc.keys, key)
	rc.header = append(rc.header, r.Header.Clone())
	if held, dup := rc.bodies[key]; dup {
		w.Header().Set(HeaderPayloadFingerprint, held.fingerprint)
		w.WriteHeader(http.StatusOK)
		return
	}
	rc.bodies[key] = received{env: env, fingerprint: fp}
	w.Header().Set(HeaderPayloadFingerprint, fp)
	w.WriteHeader(http.StatusCreated)
}

func (rc *receiver) Keys() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.keys...)
}

func (rc *receiver) Count(context.Context) (int64, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return int64(len(rc.bodies)), nil
}

func (rc *receiver) Get(_ context.Context, source, id string) (Row, error) {
	rc.mu.Lock()
	held, ok := rc.bodies[IdempotencyKey(source, id)]
	rc.mu.Unlock()
	if !ok {
		return Row{}, errNotFound
	}
	env := held.env
	row := Row{
		EventID:            env.ID,
		EventType:          env.Type,
		Source:             env.Source,
		PartitionKey:       env.PartitionKey,
		SchemaFingerprint:  env.SchemaFingerprint,
		PayloadFingerprint: held.fingerprint,
	}
	if string(env.Payload) != "null" {
		row.Payload = env.Payload
	}
	var err error
	if row.OccurredAt, err = time.Parse(time.RFC3339Nano, env.OccurredAt); err != nil {
		return Row{}, err
	}
	if row.IngestedAt, err = time.Parse(time.RFC3339Nano, env.IngestedAt); err != nil {
		return Row{}, err
	}
	return row, nil
}

func openTestHTTP(t testing.TB, url string, clock *testClock, mod func(*HTTPConfig)) *HTTP {
	t.Helper()
	cfg := NewDefaultConfig().HTTP
	cfg.URL = url
	if mod != nil {
		mod(&cfg)
	}
	h, err := OpenHTTP(cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenHTTP: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func newReceiverServer(t testing.TB) (*receiver, *httptest.Server) {
	rc := newReceiver()
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

// wantClass fails t unless err is classified as want (0: nil).
func wantClass(t *testing.T, err error, want Class) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a classified *sink.Error", err, err)
	}
	if got, _ := Classify(err); got != want {
		t.Fatalf("class = %v, want %v (err %v)", got, want, err)
	}
}

func postgresDSN(t testing.TB) string {
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SLUICE_POSTGRES_DSN not set (scripts/postgres.sh up prints one)")
	}
	return dsn
}

// writeErr writes batch to s and returns the error alone, for tests of
// how a write fails.
func writeErr(ctx context.Context, s Sink, batch []Event) error {
	_, err := s.Write(ctx, batch)
	return err
}

// waitUntil checks cond every few milliseconds until it holds, failing t
// if it does not within d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Condition(t, d, what, cond)
}

// refusedThenMigrated fails t unless open refuses a table at schema
// version v, naming sluice sink migrate, and migrate then succeeds twice
// (a migration run again is a no-op).
func refusedThenMigrated(t *testing.T, v int, open, migrate func() error) {
	t.Helper()
	err := open()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", v)) || !strings.Contains(err.Error(), "sluice sink migrate") {
		t.Fatalf("opening a version %d table: err = %v, want a refusal naming sluice sink migrate", v, err)
	}
	for i := range 2 {
		if err := migrate(); err != nil {
			t.Fatalf("migration #%d: %v", i+1, err)
		}
	}
}
