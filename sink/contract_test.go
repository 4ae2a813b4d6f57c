package sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// implementation opens one sink under test with the clock and a reader for
// what it stored.
type implementation struct {
	name   string
	stores stores
	// recordsConflicts: the sink keeps a conflicts table and reports a
	// conflicting copy once; otherwise (HTTP) the receiver keeps the
	// record and every delivery of the copy reports it.
	recordsConflicts bool
	open             func(t *testing.T, clock *testClock) (Sink, rowReader)
}

func sqliteImpl() implementation {
	return implementation{
		name:             "sqlite",
		stores:           stores{value: true, precision: time.Nanosecond},
		recordsConflicts: true,
		open: func(t *testing.T, clock *testClock) (Sink, rowReader) {
			s := openTestSQLite(t, t.TempDir(), clock)
			return s, s
		},
	}
}

func httpImpl() implementation {
	return implementation{
		name:   "http",
		stores: stores{value: false, precision: time.Nanosecond},
		open: func(t *testing.T, clock *testClock) (Sink, rowReader) {
			rc, srv := newReceiverServer(t)
			return openTestHTTP(t, srv.URL, clock, nil), rc
		},
	}
}

func postgresImpl(dsn string) implementation {
	return implementation{
		name:             "postgres",
		stores:           stores{value: true, precision: time.Microsecond},
		recordsConflicts: true,
		open: func(t *testing.T, clock *testClock) (Sink, rowReader) {
			p := openTestPostgres(t, dsn, clock)
			return p, p
		},
	}
}

// openTestPostgres migrates a table of its own for t and drops it after.
func openTestPostgres(t testing.TB, dsn string, clock *testClock) *Postgres {
	t.Helper()
	table := testTableName(t)
	ctx := context.Background()
	if err := Migrate(ctx, dsn, table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { dropTestTable(t, dsn, table) })
	cfg := NewDefaultConfig().Postgres
	cfg.DSN, cfg.Table = dsn, table
	p, err := OpenPostgres(ctx, cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func testTableName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "sink_test_" + hex.EncodeToString(b[:])
}

func dropTestTable(t testing.TB, dsn, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop %s: %v", table, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS "`+table+`", "`+table+conflictsSuffix+`", "`+table+auditSuffix+`";
		DELETE FROM sluice_sink_migrations WHERE table_name = '`+table+`'`); err != nil {
		t.Errorf("drop %s: %v", table, err)
	}
}

func TestContract(t *testing.T) {
	for _, impl := range []implementation{sqliteImpl(), httpImpl()} {
		t.Run(impl.name, func(t *testing.T) { runContract(t, impl) })
	}
}

func TestIntegrationPostgresContract(t *testing.T) {
	runContract(t, postgresImpl(postgresDSN(t)))
}

// runContract checks what the package documentation promises of every sink.
func runContract(t *testing.T, impl implementation) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clock := newTestClock()
	s, rows := impl.open(t, clock)

	if s.Name() != impl.name {
		t.Errorf("Name() = %q, want %q", s.Name(), impl.name)
	}
	count := func(want int64) {
		t.Helper()
		n, err := rows.Count(ctx)
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		if n != want {
			t.Fatalf("Count = %d, want %d", n, want)
		}
	}
	check := func(events []Event, written time.Time) {
		t.Helper()
		for _, e := range events {
			row, err := rows.Get(ctx, e.Source, e.ID)
			if err != nil {
				t.Fatalf("Get(%q, %q): %v", e.Source, e.ID, err)
			}
			checkRow(t, impl.stores, e, row, written)
		}
	}

	// A batch is stored, each row as its event.
	first := testEvents(0, 5)
	firstWritten := clock.Now()
	writeClean(t, s, first)
	count(5)
	check(first, firstWritten)

	// The same identities and payloads again, with another rendering and
	// offset and later: nothing changes, and it is no conflict.
	clock.Advance(time.Hour)
	again := testEvents(0, 5)
	for i := range again {
		again[i].JSON = []byte(`{"changed":true}`)
		again[i].Offset += 100
	}
	writeClean(t, s, again)
	count(5)
	check(first, firstWritten)

	// The same identity twice in one batch, next to new events: the first
	// wins.
	dup := testEvents(5, 3)
	twin := dup[0]
	twin.JSON = []byte(`{"twin":true}`)
	twin.Offset = 9999
	dup = append(dup, twin)
	dupWritten := clock.Now()
	writeClean(t, s, dup)
	count(8)
	check(dup[:3], dupWritten)

	// An event without a JSON rendering and with an empty value and key.
	bare := testEvent(20)
	bare.JSON, bare.Value, bare.Key = nil, nil, nil
	bare.PayloadFingerprint = Fingerprint(nil)
	writeClean(t, s, []Event{bare})
	count(9)
	check([]Event{bare}, dupWritten)

	// An empty batch is a no-op.
	writeClean(t, s, nil)

	// A batch holding an event no sink can store is refused whole.
	bad := testEvents(30, 3)
	bad[2].ID = ""
	conflicts, err := s.Write(ctx, bad)
	wantClass(t, err, Permanent)
	if conflicts != nil {
		t.Fatalf("refused batch reported conflicts %v", conflicts)
	}
	count(9)
	if _, err := rows.Get(ctx, bad[0].Source, bad[0].ID); !errors.Is(err, errNotFound) {
		t.Fatalf("Get(%q, %q) after refused batch: err = %v, want errNotFound", bad[0].Source, bad[0].ID, err)
	}

	// Concurrent batches over the same ids, in opposite orders, all succeed
	// and store each id once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		batch := testEvents(100, 20)
		if g%2 == 1 {
			slices.Reverse(batch)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conflicts, err := s.Write(ctx, batch)
			if err == nil && len(conflicts) > 0 {
				err = fmt.Errorf("conflicts %v among equal payloads", conflicts)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		wantClass(t, err, 0)
	}
	count(9 + 20)

	// After Close, Write fails transiently with ErrClosed.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = s.Write(ctx, testEvents(40, 1))
	wantClass(t, err, Transient)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestCheckBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Event)
	}{
		{"empty id", func(e *Event) { e.ID = "" }},
		{"long id", func(e *Event) { e.ID = strings.Repeat("i", maxEventIDLen+1) }},
		{"newline in id", func(e *Event) { e.ID = "a\nb" }},
		{"invalid utf-8 id", func(e *Event) { e.ID = "a\xffb" }},
		{"empty source", func(e *Event) { e.Source = "" }},
		{"long source", func(e *Event) { e.Source = strings.Repeat("s", maxSourceLen+1) }},
		{"NUL in source", func(e *Event) { e.Source = "a\x00" }},
		{"tab in source", func(e *Event) { e.Source = "a\tb" }},
		{"DEL in source", func(e *Event) { e.Source = "a\x7fb" }},
		{"invalid utf-8 source", func(e *Event) { e.Source = "\xc3" }},
		{"no payload fingerprint", func(e *Event) { e.PayloadFingerprint = "" }},
		{"payload fingerprint of another digest", func(e *Event) { e.PayloadFingerprint = "md5:" + strings.Repeat("0", 32) }},
		{"short payload fingerprint", func(e *Event) { e.PayloadFingerprint = e.PayloadFingerprint[:70] }},
		{"uppercase payload fingerprint", func(e *Event) { e.PayloadFingerprint = strings.ToUpper(e.PayloadFingerprint) }},
		{"NUL in type", func(e *Event) { e.Type = "a\x00" }},
		{"invalid utf-8 key", func(e *Event) { e.Key = []byte{0xff} }},
		{"NUL in fingerprint", func(e *Event) { e.SchemaFingerprint = "\x00" }},
		{"invalid utf-8 topic", func(e *Event) { e.Topic = "\xfe" }},
		{"JSON not JSON", func(e *Event) { e.JSON = []byte(`{"a":`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := testEvents(0, 3)
			tc.mod(&batch[1])
			err := checkBatch(batch)
			wantClass(t, err, Permanent)
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
		})
	}
	valid := testEvents(0, 3)
	valid[0].ID, valid[0].Source = strings.Repeat("i", maxEventIDLen), strings.Repeat("s", maxSourceLen)
	valid[1].ID, valid[1].Source = "order/1 ü", "tenant b/ü"
	if err := checkBatch(valid); err != nil {
		t.Fatalf("valid batch: %v", err)
	}
}

// writeClean writes batch to s and fails t unless it is stored without
// conflicts.
func writeClean(t *testing.T, s Sink, batch []Event) {
	t.Helper()
	conflicts, err := s.Write(context.Background(), batch)
	wantClass(t, err, 0)
	if len(conflicts) > 0 {
		t.Fatalf("Write reported conflicts %v, want none", conflicts)
	}
}
