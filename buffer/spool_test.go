package buffer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigValidate(t *testing.T) {
	if err := NewDefaultConfig("/x").Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"dir", func(c *Config) { c.Dir = "" }},
		{"segment_bytes", func(c *Config) { c.SegmentBytes = 100 }},
		{"max_bytes", func(c *Config) { c.MaxBytes = c.SegmentBytes - 1 }},
		{"min_free_bytes", func(c *Config) { c.MinFreeBytes = -1 }},
		{"max_record_bytes", func(c *Config) { c.MaxRecordBytes = 0 }},
		{"max_record_bytes", func(c *Config) { c.MaxRecordBytes = maxFrameRecordBytes + 1 }},
		{"fsync", func(c *Config) { c.Fsync = "" }},
		{"fsync", func(c *Config) { c.Fsync = "always" }},
		{"max_batch_bytes", func(c *Config) { c.MaxBatchBytes = c.MaxRecordBytes - 1 }},
	} {
		cfg := NewDefaultConfig("/x")
		c.mutate(&cfg)
		err := cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.HasPrefix(err.Error(), "buffer: "+c.field+": ") {
			t.Errorf("%s: Validate = %v, want a *ConfigError naming it", c.field, err)
		}
		if _, oerr := Open(cfg); oerr == nil || oerr.Error() != err.Error() {
			t.Errorf("%s: Open = %v, want %v", c.field, oerr, err)
		}
	}
}

func TestAppendNextAck(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	reg := prometheus.NewRegistry()
	s := openSpool(t, testConfig(dir), WithRegisterer(reg), WithClock(clock))

	if !s.Empty() || !s.Stats().OldestAppendedAt.IsZero() {
		t.Fatalf("new spool: %+v", s.Stats())
	}
	t0 := clock()
	if _, err := s.Append(context.Background(), []byte("a"), []byte("bb"), nil); err != nil {
		t.Fatal(err)
	}
	advance(90 * time.Second)
	appendOne(t, s, []byte("dddd"))

	st := s.Stats()
	if st.Records != 4 || st.Segments != 1 || !st.OldestAppendedAt.Equal(t0) {
		t.Fatalf("stats = %+v", st)
	}
	wantBytes := int64(segmentHeaderSize) + frameSize(1) + frameSize(2) + frameSize(0) + frameSize(4)
	if st.Bytes != wantBytes {
		t.Fatalf("bytes = %d, want %d", st.Bytes, wantBytes)
	}
	if got := metricValue(t, reg, "sluice_spool_max_bytes"); got != float64(testConfig(dir).MaxBytes) {
		t.Errorf("sluice_spool_max_bytes = %v, want the config's max_bytes %d", got, testConfig(dir).MaxBytes)
	}
	if got := metricValue(t, reg, "sluice_spool_oldest_record_age_seconds"); got != 90 {
		t.Errorf("oldest age = %v, want 90", got)
	}

	es, err := s.Next(waitCtx(t), 2)
	if err != nil || !slices.Equal(contents(es), []string{"a", "bb"}) {
		t.Fatalf("Next = %q, %v", contents(es), err)
	}
	if !es[0].AppendedAt.Equal(t0) || es[0].Pos.Compare(es[1].Pos) >= 0 {
		t.Fatalf("entries = %+v", es)
	}
	if err := s.Ack(es[1].Pos); err != nil {
		t.Fatal(err)
	}
	es, err = s.Next(waitCtx(t), 10)
	if err != nil || !slices.Equal(contents(es), []string{"", "dddd"}) {
		t.Fatalf("Next = %q, %v", contents(es), err)
	}
	if err := s.Ack(es[0].Pos); err != nil {
		t.Fatal(err)
	}
	// The oldest unacknowledged record is now the one appended at t0+90s.
	if got := s.Stats().OldestAppendedAt; !got.Equal(t0.Add(90 * time.Second)) {
		t.Errorf("oldest = %v", got)
	}
	if got := metricValue(t, reg, "sluice_spool_oldest_record_age_seconds"); got != 0 {
		t.Errorf("oldest age = %v, want 0", got)
	}
	if err := s.Ack(es[1].Pos); err != nil {
		t.Fatal(err)
	}
	if !s.Empty() || !s.Stats().OldestAppendedAt.IsZero() {
		t.Fatalf("after acking all: %+v", s.Stats())
	}
	for name, want := range map[string]float64{
		"sluice_spool_records":  0,
		"sluice_spool_segments": 1,
		"sluice_spool_bytes":    float64(wantBytes),
	} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, reg, "sluice_spool_appends_total", "result", "ok"); got != 2 {
		t.Errorf("appends ok = %v, want 2", got)
	}
	// Acknowledging again, or something already covered, does nothing.
	if err := s.Ack(es[0].Pos); err != nil {
		t.Errorf("Ack of a covered position: %v", err)
	}
	assertNothingMore(t, s)
}

func TestAckPastNext(t *testing.T) {
	s := openSpool(t, testConfig(t.TempDir()))
	appendOne(t, s, []byte("a"))
	appendOne(t, s, []byte("b"))
	es, err := s.Next(waitCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(Position{es[0].Pos.Segment, es[0].Pos.Offset + 8}); !errors.Is(err, errAckAhead) {
		t.Fatalf("Ack past Next = %v, want errAckAhead", err)
	}
	if _, err := s.Next(waitCtx(t), 0); !errors.Is(err, errBadMax) {
		t.Fatalf("Next(0) = %v", err)
	}
}

// Many concurrent appenders share fsyncs. The writer's first sync is held
// until every other appender has queued, so the next batch holds them all
// whatever the machine's speed.
func TestGroupCommit(t *testing.T) {
	const appenders, each = 32, 8
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	var s *Spool
	held := false
	hold := func() {
		if held {
			return
		}
		held = true
		// The batch being synced holds s.w.unsynced appends of one record.
		deadline := time.Now().Add(10 * time.Second)
		for len(s.queue) < appenders-s.w.unsynced {
			if time.Now().After(deadline) {
				t.Errorf("only %d appends queued", len(s.queue))
				return
			}
			runtime.Gosched()
		}
	}
	s = openSpool(t, testConfig(dir), WithRegisterer(reg), withBeforeSync(hold))

	var wg sync.WaitGroup
	errs := make(chan error, appenders*each)
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				errs <- appendErr(s.Append(context.Background(), fmt.Appendf(nil, "g%02d-%d", g, i)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}

	fsyncs := metricValue(t, reg, "sluice_spool_fsyncs_total")
	sum, count := histogram(t, reg, "sluice_spool_records_per_fsync")
	if ok := metricValue(t, reg, "sluice_spool_appends_total", "result", "ok"); ok != appenders*each {
		t.Fatalf("appends_total = %v", ok)
	}
	if sum != appenders*each || count != fsyncs {
		t.Fatalf("records_per_fsync sum %v count %v, fsyncs %v", sum, count, fsyncs)
	}
	if perFsync := sum / count; perFsync <= 1 {
		t.Fatalf("records per fsync = %v, want > 1 (%v fsyncs)", perFsync, fsyncs)
	}
	t.Logf("%v appends in %v fsyncs", sum, fsyncs)

	// Every append that returned nil is there after a reopen, and each
	// appender's records are in its order.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, testConfig(dir))
	next := make(map[string]int)
	got := readPending(t, s)
	for _, e := range got {
		var g, i int
		if _, err := fmt.Sscanf(string(e.Data), "g%02d-%d", &g, &i); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(g)
		if i != next[key] {
			t.Fatalf("appender %d: record %d after %d", g, i, next[key]-1)
		}
		next[key]++
	}
	if len(got) != appenders*each {
		t.Fatalf("%d records after reopen, want %d", len(got), appenders*each)
	}
}

func histogram(t *testing.T, g prometheus.Gatherer, name string) (sum, count float64) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleSum(), float64(h.GetSampleCount())
		}
	}
	t.Fatalf("%s not registered", name)
	return 0, 0
}

// smallConfig makes segments of four 100-byte records.
func smallConfig(dir string) Config {
	cfg := testConfig(dir)
	cfg.SegmentBytes = 512
	cfg.MaxBytes = 1 << 20
	cfg.MaxRecordBytes = 100
	cfg.MaxBatchBytes = 400
	return cfg
}

func TestAckDeletesSegmentsAndCursorPersists(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	s := openSpool(t, cfg)
	for i := range 20 {
		appendOne(t, s, payload(i, 100))
	}
	if st := s.Stats(); st.Segments != 5 {
		t.Fatalf("%d segments, want 5 of 4 records", st.Segments)
	}
	es, err := s.Next(waitCtx(t), 10)
	if err != nil || len(es) != 10 {
		t.Fatalf("Next = %d, %v", len(es), err)
	}
	if err := s.Ack(es[9].Pos); err != nil {
		t.Fatal(err)
	}
	// Records 0-7 filled segments 1 and 2; segment 3 holds 8-11.
	if _, n := dirBytes(t, dir); n != 3 || s.Stats().Segments != 3 || s.Stats().Records != 10 {
		t.Fatalf("after Ack: %d files, %+v", n, s.Stats())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openSpool(t, cfg)
	got := readPending(t, s)
	var want []string
	for i := 10; i < 20; i++ {
		want = append(want, string(payload(i, 100)))
	}
	if !slices.Equal(contents(got), want) {
		t.Fatalf("after reopen: %s", short(contents(got)))
	}
	if err := s.Ack(got[len(got)-1].Pos); err != nil {
		t.Fatal(err)
	}
	if bytes, n := dirBytes(t, dir); n != 0 || s.Stats().Bytes != 0 || bytes != 0 {
		t.Fatalf("after acking all: %d files, %+v", n, s.Stats())
	}
	appendOne(t, s, []byte("again"))
	if got := readPending(t, s); len(got) != 1 || got[0].Pos.Segment <= 5 {
		t.Fatalf("after acking all, append = %v", got)
	}
}

func TestRewind(t *testing.T) {
	s := openSpool(t, smallConfig(t.TempDir()))
	for i := range 6 {
		appendOne(t, s, payload(i, 100))
	}
	ctx := waitCtx(t)
	first, err := s.Next(ctx, 3)
	if err != nil || len(first) != 3 {
		t.Fatal(len(first), err)
	}
	if _, err := s.Next(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(first[1].Pos); err != nil {
		t.Fatal(err)
	}
	s.Rewind()
	es, err := s.Next(ctx, 10)
	if err != nil || !slices.Equal(contents(es), contents(mustEntries(2, 6))) {
		t.Fatalf("after Rewind: %s, %v", short(contents(es)), err)
	}
	// Rewind, then acknowledge past the read position: Next skips to
	// after the acknowledged records.
	s.Rewind()
	if err := s.Ack(es[2].Pos); err != nil {
		t.Fatal(err)
	}
	es, err = s.Next(ctx, 10)
	if err != nil || !slices.Equal(contents(es), contents(mustEntries(5, 6))) {
		t.Fatalf("after Rewind and Ack: %s, %v", short(contents(es)), err)
	}
	if err := s.Ack(es[0].Pos); err != nil {
		t.Fatal(err)
	}
	s.Rewind()
	assertNothingMore(t, s)
}

func mustEntries(from, to int) []Entry {
	var es []Entry
	for i := from; i < to; i++ {
		es = append(es, Entry{Data: payload(i, 100)})
	}
	return es
}

func TestNextWaitsForAppend(t *testing.T) {
	s := openSpool(t, testConfig(t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if es, err := s.Next(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on an empty spool = %v, %v; want it to wait until the deadline", es, err)
	}

	type result struct {
		es  []Entry
		err error
	}
	got := make(chan result, 1)
	go func() {
		es, err := s.Next(waitCtx(t), 10)
		got <- result{es, err}
	}()
	appendOne(t, s, []byte("wake"))
	select {
	case r := <-got:
		if r.err != nil || len(r.es) != 1 || string(r.es[0].Data) != "wake" {
			t.Fatalf("Next = %q, %v", contents(r.es), r.err)
		}
	case <-waitCtx(t).Done():
		t.Fatal("Next did not return after an append")
	}

	// Close wakes a waiting Next.
	go func() {
		es, err := s.Next(context.Background(), 10)
		got <- result{es, err}
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if !errors.Is(r.err, ErrClosed) {
			t.Fatalf("Next after Close = %v", r.err)
		}
	case <-waitCtx(t).Done():
		t.Fatal("Close did not wake Next")
	}
}

// Close finishes the appends already queued: they are written and
// answered nil, and found after a reopen.
func TestCloseFinishesQueuedAppends(t *testing.T) {
	const n = 6
	dir := t.TempDir()
	var s *Spool
	queued := make(chan struct{})
	release := make(chan struct{})
	held := false
	hold := func() {
		if held {
			return
		}
		held = true
		deadline := time.Now().Add(10 * time.Second)
		for len(s.queue) < n-s.w.unsynced && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		close(queued)
		<-release
	}
	s = openSpool(t, testConfig(dir), withBeforeSync(hold))
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- appendErr(s.Append(context.Background(), payload(i, 10))) }()
	}
	<-queued
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Wait until Close has stopped new appends, then let the writer go.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.sendMu.RLock()
		stopped := s.sendClosed
		s.sendMu.RUnlock()
		if stopped || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	if _, err := s.Append(context.Background(), []byte("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append during Close = %v, want ErrClosed", err)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("queued Append = %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for _, fn := range []func() error{
		func() error { return appendErr(s.Append(context.Background(), []byte("x"))) },
		func() error { _, err := s.Next(context.Background(), 1); return err },
		func() error { return s.Ack(Position{}) },
	} {
		if err := fn(); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v, want ErrClosed", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s = openSpool(t, testConfig(dir))
	if got := readPending(t, s); len(got) != n {
		t.Fatalf("%d records after reopen, want %d", len(got), n)
	}
}

func TestAppendTooLarge(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openSpool(t, smallConfig(t.TempDir()), WithRegisterer(reg))
	if _, err := s.Append(context.Background(), make([]byte, 101)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("record over MaxRecordBytes: %v", err)
	}
	// Three frames of 120 bytes fit in 400, four do not; nor do many empty
	// records, whose frames take 24 bytes each.
	recs := [][]byte{make([]byte, 100), make([]byte, 100), make([]byte, 100), make([]byte, 100)}
	if _, err := s.Append(context.Background(), recs...); !errors.Is(err, ErrTooLarge) {
		t.Errorf("append over MaxBatchBytes: %v", err)
	}
	if _, err := s.Append(context.Background(), make([][]byte, 17)...); !errors.Is(err, ErrTooLarge) {
		t.Errorf("17 empty records: %v", err)
	}
	if _, err := s.Append(context.Background(), recs[:3]...); err != nil {
		t.Errorf("append within MaxBatchBytes: %v", err)
	}
	if got := metricValue(t, reg, "sluice_spool_appends_total", "result", "too_large"); got != 3 {
		t.Errorf("appends too_large = %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Append(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled append: %v", err)
	}
}

func TestCap(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.MaxBytes = 4 * 512
	s := openSpool(t, cfg)
	// Four segments of four records: 4*(24+4*120) = 2016 bytes; the next
	// record needs a new segment: 24+120 more.
	for i := range 16 {
		appendOne(t, s, payload(i, 100))
	}
	before, segs := dirBytes(t, dir)
	_, err := s.Append(context.Background(), payload(16, 100))
	var fe *FullError
	if !errors.As(err, &fe) || !errors.Is(err, ErrFull) || fe.Reason != ReasonCap {
		t.Fatalf("Append at the cap = %v, want FullError cap", err)
	}
	if fe.Need != segmentHeaderSize+120 || fe.Free != cfg.MaxBytes-before {
		t.Errorf("FullError = %+v, spool has %d bytes", fe, before)
	}
	if after, n := dirBytes(t, dir); after != before || n != segs {
		t.Fatalf("disk changed by a failed append: %d bytes in %d files, was %d in %d", after, n, before, segs)
	}
	if st := s.Stats(); st.Records != 16 {
		t.Fatalf("stats = %+v", st)
	}

	// Acknowledging frees segments; appending works again.
	got := readPending(t, s)
	if err := s.Ack(got[len(got)-1].Pos); err != nil {
		t.Fatal(err)
	}
	for i := 16; i < 32; i++ {
		appendOne(t, s, payload(i, 100))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, cfg)
	if got := readPending(t, s); len(got) != 16 || string(got[0].Data) != string(payload(16, 100)) {
		t.Fatalf("after reopen: %s", short(contents(got)))
	}
}

func TestDiskFloor(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.MinFreeBytes = 1 << 62
	s := openSpool(t, cfg)
	_, err := s.Append(context.Background(), []byte("x"))
	var fe *FullError
	if !errors.As(err, &fe) || fe.Reason != ReasonDiskFloor || fe.Free != 0 {
		t.Fatalf("Append below the floor = %v, want FullError disk_floor", err)
	}
	if _, n := dirBytes(t, dir); n != 0 {
		t.Fatalf("%d segment files after a refused append", n)
	}
}

func TestPositionOrder(t *testing.T) {
	ps := []Position{{2, 24}, {1, 100}, {1, 24}, {3, 0}}
	slices.SortFunc(ps, Position.Compare)
	if !slices.Equal(ps, []Position{{1, 24}, {1, 100}, {2, 24}, {3, 0}}) {
		t.Fatal(ps)
	}
}

// TestAppendPositions: the position Append returns, and the ones after
// it by FrameBytes, are where Next finds each record, from concurrent
// appends of several records, across segments, and after a reopen.
func TestAppendPositions(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentBytes = minSegmentBytes // a few appends per segment
	s := openSpool(t, cfg)
	const appenders, each = 4, 20
	type appended struct {
		pos  Position
		data []byte
	}
	out := make(chan appended, appenders*each*3)
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				recs := [][]byte{payload(g*1000+i, 10+i), payload(g*1000+i, 3), nil}[:1+i%3]
				pos, err := s.Append(context.Background(), recs...)
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				for _, r := range recs {
					out <- appended{pos, r}
					pos.Offset += FrameBytes(len(r))
				}
			}
		})
	}
	wg.Wait()
	close(out)
	want := map[Position][]byte{}
	for a := range out {
		if _, dup := want[a.pos]; dup {
			t.Fatalf("two records at %v", a.pos)
		}
		want[a.pos] = a.data
	}
	check := func(s *Spool) {
		t.Helper()
		got := readPending(t, s)
		if len(got) != len(want) {
			t.Fatalf("%d records, %d appended", len(got), len(want))
		}
		segments := map[uint64]bool{}
		for _, e := range got {
			data, ok := want[e.Pos]
			if !ok || string(data) != string(e.Data) {
				t.Fatalf("Next: %q at %v; Append put %q there", e.Data, e.Pos, data)
			}
			segments[e.Pos.Segment] = true
		}
		if len(segments) < 2 {
			t.Fatalf("the records are in %d segment(s); the test needs more", len(segments))
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openSpool(t, cfg))
}

func TestOpenRemovesStrayTempFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{cursorName + tempExt, segmentName(3) + tempExt} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	s := openSpool(t, testConfig(dir))
	appendOne(t, s, []byte("a"))
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*"+tempExt)); len(tmps) != 0 {
		t.Fatalf("temp files left: %v", tmps)
	}
}

// The queue to the writer is bounded: with the writer held and the queue
// full, Append waits for room until its context ends.
func TestAppendQueueBound(t *testing.T) {
	reg := prometheus.NewRegistry()
	var s *Spool
	release := make(chan struct{})
	held := false
	hold := func() {
		if !held {
			held = true
			<-release
		}
	}
	s = openSpool(t, testConfig(t.TempDir()), WithRegisterer(reg), withBeforeSync(hold))
	var wg sync.WaitGroup
	errs := make(chan error, queueLen+1)
	for i := range queueLen + 1 { // one in the held batch, the rest queued
		wg.Go(func() { errs <- appendErr(s.Append(context.Background(), payload(i, 10))) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.queue) < queueLen && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Append(ctx, []byte("no room")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append with a full queue = %v, want context.DeadlineExceeded", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if got := metricValue(t, reg, "sluice_spool_appends_total", "result", "canceled"); got != 1 {
		t.Errorf("canceled appends = %v", got)
	}
	if got := s.Stats().Records; got != queueLen+1 {
		t.Errorf("%d records, want %d", got, queueLen+1)
	}
}

// TestAppendOverMaxBytes: an append that an empty spool could not hold
// under MaxBytes is ErrTooLarge (the same input always fails), not a
// FullError that a retry could never get past; CheckRecord names the limit
// that keeps a record out.
func TestAppendOverMaxBytes(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SegmentBytes, cfg.MaxBytes, cfg.MaxRecordBytes, cfg.MaxBatchBytes = 1024, 1024, 4096, 4096
	s := openSpool(t, cfg)
	if _, err := s.Append(context.Background(), make([]byte, 1000)); !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrFull) {
		t.Errorf("a record no empty spool can hold: %v, want ErrTooLarge", err)
	}
	fits := int(cfg.MaxAppendBytes()) - frameHeaderSize
	if _, err := s.Append(context.Background(), make([]byte, fits)); err != nil {
		t.Errorf("a record of MaxAppendBytes framed: %v", err)
	}
	for _, c := range []struct {
		n     int
		field string
	}{
		{fits, ""},
		{fits + 1, "max_bytes"},
		{4097, "max_record_bytes"},
	} {
		err := cfg.CheckRecord(c.n)
		var ce *ConfigError
		if c.field == "" && err != nil || c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field) {
			t.Errorf("CheckRecord(%d) = %v, want one naming %q", c.n, err, c.field)
		}
	}
}
