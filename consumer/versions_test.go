package consumer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/breaker"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/internal/eventtest"
	"github.com/sluicehq/sluice/record"
)

// fingerprintOf returns the schema fingerprint of the test type in r.
func fingerprintOf(t testing.TB, r *contract.Registry) string {
	t.Helper()
	c, ok := r.Lookup(testType)
	if !ok {
		t.Fatalf("no %s contract", testType)
	}
	return c.Fingerprint()
}

// withRegion is value, a LogLine, with eventtest.AddRegion's field set:
// the example contracts cannot read it without loss.
func withRegion(value []byte) []byte { return eventtest.WithRegion(value, "eu_west_1") }

// versionRecord is a LogLine record of the test topic, keyed by its id,
// published under the schema version fingerprint.
func versionRecord(t testing.TB, id, fingerprint string, value []byte) *kgo.Record {
	return eventtest.VersionRecord(t, testTopic, id, id, fingerprint, value)
}

// bySchema returns sluice_consumer_events_by_schema_total of the test type
// with fingerprint and decoded_with, and whether the series exists.
func bySchema(t testing.TB, reg *prometheus.Registry, fingerprint, decodedWith string) (float64, bool) {
	t.Helper()
	m, ok := sample(t, reg, "sluice_consumer_events_by_schema_total",
		map[string]string{"type": testType, "fingerprint": fingerprint, "decoded_with": decodedWith})
	return m.GetCounter().GetValue(), ok
}

// regionOf returns the region field of a LogLine's JSON, "" when it has
// none.
func regionOf(t testing.TB, js string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("sink JSON %q: %v", js, err)
	}
	r, _ := m["region"].(string)
	return r
}

// TestVersionsInFlight: records published under v1, and, once a reload
// swapped v2 (v1 and a field) in mid-run, under v2 and still under v1, are
// all written, each decoded with its own version: v2's field reaches the
// sink.
func TestVersionsInFlight(t *testing.T) {
	v1, v2 := testRegistry(t), eventtest.Evolved(t, eventtest.AddRegion())
	fp1, fp2 := fingerprintOf(t, v1), fingerprintOf(t, v2)
	versions := newVersions(t, v1, 0)
	addrs := newCluster(t, 1)
	s := newMemSink()
	reg := prometheus.NewRegistry()
	r := startVersions(t, testConfig("versions"), versions, addrs, s, WithRegisterer(reg))

	var ids []string
	recs := func(n int, prefix, fingerprint string, value []byte) []*kgo.Record {
		var out []*kgo.Record
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			ids = append(ids, id)
			out = append(out, versionRecord(t, id, fingerprint, value))
		}
		return out
	}
	produce(t, addrs, recs(4, "v1", fp1, logLine(t))...)
	waitFor(t, 20*time.Second, "the v1 records written", func() bool { return s.hasAll(ids) })
	versions.Swap(v2)
	var after []*kgo.Record
	after = append(after, recs(3, "v2-region", fp2, withRegion(logLine(t)))...)
	after = append(after, recs(2, "v2", fp2, logLine(t))...)
	after = append(after, recs(3, "v1-late", fp1, logLine(t))...)
	produce(t, addrs, after...)
	waitFor(t, 20*time.Second, "every record written", func() bool { return s.hasAll(ids) })

	for _, tc := range []struct {
		fingerprint, decodedWith string
		want                     float64
	}{
		{fp1, decodedOwn, 7},
		{fp2, decodedOwn, 5},
		{fingerprintUnknown, decodedNewest, 0},
		{fingerprintUnknown, decodedNone, 0},
	} {
		if got, _ := bySchema(t, reg, tc.fingerprint, tc.decodedWith); got != tc.want {
			t.Errorf("events by schema {fingerprint=%s, decoded_with=%s} = %v, want %v", tc.fingerprint, tc.decodedWith, got, tc.want)
		}
	}
	for _, id := range ids {
		want := ""
		if strings.HasPrefix(id, "v2-region") {
			want = "eu_west_1"
		}
		if got := regionOf(t, s.jsonOf(id)); got != want {
			t.Errorf("%s written with region %q, want %q: %s", id, got, want, s.jsonOf(id))
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 0 {
		t.Fatalf("%d records dead-lettered", n)
	}
}

// TestUnknownVersionReadableByNewest: a record of a schema version the
// consumer does not keep, whose value the newest reads without loss, is
// decoded with the newest and written.
func TestUnknownVersionReadableByNewest(t *testing.T) {
	fp2 := fingerprintOf(t, eventtest.Evolved(t, eventtest.AddRegion()))
	addrs := newCluster(t, 1)
	produce(t, addrs, versionRecord(t, "older-or-newer", fp2, logLine(t)))
	s := newMemSink()
	reg := prometheus.NewRegistry()
	r := start(t, testConfig("unknown-readable"), addrs, s, WithRegisterer(reg))
	waitFor(t, 20*time.Second, "written", func() bool { return s.hasAll([]string{"older-or-newer"}) })
	if got, _ := bySchema(t, reg, fingerprintUnknown, decodedNewest); got != 1 {
		t.Errorf("events by schema {fingerprint=unknown, decoded_with=newest} = %v, want 1", got)
	}
	if _, ok := bySchema(t, reg, fp2, decodedOwn); ok {
		t.Error("a series for a fingerprint not kept")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.DLQTopic(testTopic))); n != 0 {
		t.Fatalf("%d records dead-lettered", n)
	}
}

// TestUnknownVersionUnreadable: a record of a schema version the consumer
// does not keep, setting a field the newest lacks, goes to the DLQ at once
// as class schema, retryable, without a write: the breaker records
// nothing and no sink-failure metric moves. Once a reload keeps the
// version that wrote it, a drain pass delivers it, field included.
func TestUnknownVersionUnreadable(t *testing.T) {
	v2 := eventtest.Evolved(t, eventtest.AddRegion())
	fp2 := fingerprintOf(t, v2)
	versions := testVersions(t)
	addrs := newCluster(t, 1)
	produce(t, addrs, versionRecord(t, "regional", fp2, withRegion(logLine(t))))
	s := newMemSink()
	cfg := testConfig("unknown-unreadable")
	// A single write recorded would make the breaker judged.
	cfg.Breaker.MinRequests = 1
	// No drain pass until the clock is moved past the interval, after the
	// reload.
	cfg.DLQ.DrainInterval = time.Hour
	clock := &offsetClock{}
	reg := prometheus.NewRegistry()
	r := startVersions(t, cfg, versions, addrs, s, WithRegisterer(reg), WithClock(clock))
	waitFor(t, 20*time.Second, "dead-lettered", func() bool { return len(readAll(t, addrs, record.DLQTopic(testTopic))) == 1 })
	waitFor(t, 20*time.Second, "committed", func() bool { return committed(t, addrs, "unknown-unreadable", testTopic)[0] == 1 })

	env := mustEnvelope(t, readAll(t, addrs, record.DLQTopic(testTopic))[0])
	if env.Class != record.ClassSchema || !env.Retryable || env.Attempts != 0 || env.DLQRetries != 0 ||
		env.SourceTopic != testTopic || env.SourceOffset != 0 || !strings.Contains(env.Error, fp2) {
		t.Fatalf("dead letter envelope %+v", env)
	}
	if st := r.c.deliverer.breaker.State(); st != breaker.Closed || r.c.deliverer.breaker.Judged() {
		t.Errorf("breaker %s, judged %v: it saw a write", st, r.c.deliverer.breaker.Judged())
	}
	if v, _ := gauge(t, reg, "sluice_sink_circuit_state", map[string]string{"sink": "mem"}); v != 0 {
		t.Errorf("sluice_sink_circuit_state = %v", v)
	}
	for _, class := range []string{"transient", "permanent"} {
		if v := counter(t, reg, "sluice_sink_errors_total", map[string]string{"sink": "mem", "class": class}); v != 0 {
			t.Errorf("sluice_sink_errors_total{class=%q} = %v", class, v)
		}
	}
	if v := counter(t, reg, "sluice_consumer_retries_total", map[string]string{"sink": "mem"}); v != 0 {
		t.Errorf("sluice_consumer_retries_total = %v", v)
	}
	s.mu.Lock()
	calls := s.calls
	s.mu.Unlock()
	if calls != 0 {
		t.Errorf("%d sink writes for a record that was never decoded", calls)
	}
	if v := counter(t, reg, "sluice_consumer_dead_letters_total",
		map[string]string{"topic": record.DLQTopic(testTopic), "kind": "dlq", "class": record.ClassSchema}); v != 1 {
		t.Errorf("dead letters of class schema: %v, want 1", v)
	}
	if got, _ := bySchema(t, reg, fingerprintUnknown, decodedNone); got != 1 {
		t.Errorf("events by schema {fingerprint=unknown, decoded_with=none} = %v, want 1", got)
	}

	// A reload brings the version that wrote the record.
	versions.Swap(v2)
	clock.Advance(2 * time.Hour)
	waitFor(t, 20*time.Second, "drained into the sink", func() bool { return s.hasAll([]string{"regional"}) })
	waitFor(t, 20*time.Second, "DLQ committed", func() bool {
		return committed(t, addrs, "unknown-unreadable", record.DLQTopic(testTopic))[0] == 1
	})
	if got := regionOf(t, s.jsonOf("regional")); got != "eu_west_1" {
		t.Errorf("written with region %q: %s", got, s.jsonOf("regional"))
	}
	if got, _ := bySchema(t, reg, fp2, decodedOwn); got != 1 {
		t.Errorf("events by schema {fingerprint=v2, decoded_with=own} = %v, want 1", got)
	}
	if v := counter(t, reg, "sluice_consumer_dlq_drained_total", map[string]string{"outcome": outcomeWritten}); v != 1 {
		t.Errorf("drained and written: %v, want 1", v)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, addrs, record.ParkedTopic(testTopic))); n != 0 {
		t.Fatalf("%d records parked", n)
	}
}

// TestDrainUnknownVersionGoesBack: a drained record of a schema version not
// kept that the newest cannot read is not judged by the newest's contract
// nor parked for it: it goes back to the DLQ as class schema, retryable,
// with dlq_retries+1, and past max_retries it is parked max_retries, as
// any retryable dead letter.
func TestDrainUnknownVersionGoesBack(t *testing.T) {
	fp2 := fingerprintOf(t, eventtest.Evolved(t, eventtest.AddRegion()))
	addrs := newCluster(t, 1)
	at := time.Now().UTC()
	env := record.Envelope{Class: record.ClassSchema, Error: "not kept", Sink: "mem", FirstFailureAt: at, LastFailureAt: at,
		Retryable: true, SourceTopic: testTopic, Group: "g"}
	produce(t, addrs, record.NewDeadLetter(record.DLQTopic(testTopic), versionRecord(t, "regional", fp2, withRegion(logLine(t))), &env))
	s := newMemSink()
	cfg := drainConfig("unknown-drain")
	cfg.DLQ.MaxRetries = 1
	reg := prometheus.NewRegistry()
	r := start(t, cfg, addrs, s, WithRegisterer(reg))
	waitFor(t, 20*time.Second, "parked", func() bool { return len(readAll(t, addrs, record.ParkedTopic(testTopic))) == 1 })
	parked := mustEnvelope(t, readAll(t, addrs, record.ParkedTopic(testTopic))[0])
	if parked.Class != record.ClassSchema || parked.ParkedReason != record.ParkedMaxRetries || parked.DLQRetries != 2 || parked.Retryable {
		t.Fatalf("parked with %+v", parked)
	}
	waitFor(t, 20*time.Second, "DLQ committed", func() bool {
		return committed(t, addrs, "unknown-drain", record.DLQTopic(testTopic))[0] == 2
	})
	if v := counter(t, reg, "sluice_consumer_drain_refused_total",
		map[string]string{"topic": record.DLQTopic(testTopic), "reason": record.ParkedContract}); v != 0 {
		t.Errorf("%v drained records refused for their contract", v)
	}
	if got, _ := bySchema(t, reg, fingerprintUnknown, decodedNone); got != 2 {
		t.Errorf("events by schema {fingerprint=unknown, decoded_with=none} = %v, want 2", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	dlq := readAll(t, addrs, record.DLQTopic(testTopic))
	if len(dlq) != 2 {
		t.Fatalf("DLQ holds %d records, want the original and one retry", len(dlq))
	}
	back := mustEnvelope(t, dlq[1])
	if back.Class != record.ClassSchema || !back.Retryable || back.DLQRetries != 1 || back.ParkedReason != "" ||
		!back.FirstFailureAt.Equal(at) {
		t.Fatalf("back in the DLQ with %+v", back)
	}
	if s.count() != 0 {
		t.Fatalf("sink holds %v", s.ids())
	}
}

// TestSchemaSeriesPruned: sluice_consumer_events_by_schema_total has the
// series of the versions kept from the start, and once a reload drops a
// version from the history its series go; a record of the dropped version
// counts as unknown.
func TestSchemaSeriesPruned(t *testing.T) {
	v1 := testRegistry(t)
	v2 := eventtest.Evolved(t, eventtest.AddRegion())
	v3 := eventtest.Evolved(t, eventtest.AddRegion(),
		contracttest.AddField(testType, "zone", 11, descriptorpb.FieldDescriptorProto_TYPE_STRING))
	fp1, fp2, fp3 := fingerprintOf(t, v1), fingerprintOf(t, v2), fingerprintOf(t, v3)
	const orderType = "examples.shop.v1.OrderPlaced"
	order, _ := v1.Lookup(orderType)
	versions := newVersions(t, v1, 2)
	addrs := newCluster(t, 1)
	s := newMemSink()
	reg := prometheus.NewRegistry()
	r := startVersions(t, testConfig("pruned"), versions, addrs, s, WithRegisterer(reg))
	has := func(typ, fingerprint, decodedWith string) bool {
		_, ok := sample(t, reg, "sluice_consumer_events_by_schema_total",
			map[string]string{"type": typ, "fingerprint": fingerprint, "decoded_with": decodedWith})
		return ok
	}
	for _, l := range [][3]string{
		{testType, fp1, decodedOwn}, {testType, fingerprintUnknown, decodedNewest}, {testType, fingerprintUnknown, decodedNone},
		{orderType, order.Fingerprint(), decodedOwn},
	} {
		if !has(l[0], l[1], l[2]) {
			t.Errorf("a fresh consumer has no series %v", l)
		}
	}

	produce(t, addrs, versionRecord(t, "a", fp1, logLine(t)))
	waitFor(t, 20*time.Second, "a written", func() bool { return s.hasAll([]string{"a"}) })
	if got, _ := bySchema(t, reg, fp1, decodedOwn); got != 1 {
		t.Fatalf("v1 records counted: %v, want 1", got)
	}
	// Two versions kept: v1 leaves the history.
	versions.Swap(v2)
	versions.Swap(v3)
	produce(t, addrs, versionRecord(t, "b", fp3, logLine(t)), versionRecord(t, "c", fp1, logLine(t)))
	waitFor(t, 20*time.Second, "b and c written", func() bool { return s.hasAll([]string{"b", "c"}) })
	if has(testType, fp1, decodedOwn) {
		t.Error("the series of a version no longer kept is still exported")
	}
	for _, tc := range []struct {
		fingerprint, decodedWith string
		want                     float64
	}{
		{fp2, decodedOwn, 0},
		{fp3, decodedOwn, 1},
		{fingerprintUnknown, decodedNewest, 1}, // c: v1 is no longer kept
		{fingerprintUnknown, decodedNone, 0},
	} {
		if got, ok := bySchema(t, reg, tc.fingerprint, tc.decodedWith); !ok || got != tc.want {
			t.Errorf("events by schema {fingerprint=%s, decoded_with=%s} = %v (exported %v), want %v",
				tc.fingerprint, tc.decodedWith, got, ok, tc.want)
		}
	}
	if !has(orderType, order.Fingerprint(), decodedOwn) {
		t.Error("the series of another type's version, still kept, is gone")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}
