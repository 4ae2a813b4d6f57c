package buffer

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testConfig is a config for a spool in dir that does not depend on the
// machine's free disk space.
func testConfig(dir string) Config {
	cfg := NewDefaultConfig(dir)
	cfg.MinFreeBytes = 0
	return cfg
}

var discardLogger = slog.New(slog.DiscardHandler)

// testLogger logs through t.Log, so that logs show with the test that
// made them.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// openSpool opens a spool with a test logger and closes it at the end of
// the test.
func openSpool(t testing.TB, cfg Config, opts ...Option) *Spool {
	t.Helper()
	s, err := Open(cfg, append([]Option{WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// payload is record i's content: it names i and is n bytes long.
func payload(i, n int) []byte {
	p := fmt.Sprintf("record-%04d-", i)
	if len(p) < n {
		p += strings.Repeat(string(rune('a'+i%26)), n-len(p))
	}
	return []byte(p[:n])
}

// appendErr is an Append's error alone.
func appendErr(_ Position, err error) error { return err }

func appendOne(t testing.TB, s *Spool, rec []byte) {
	t.Helper()
	if _, err := s.Append(context.Background(), rec); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// waitCtx bounds how long a test waits for a condition.
func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readPending reads every record not yet acknowledged, as Stats counts
// them, then checks that Next has nothing more.
func readPending(t testing.TB, s *Spool) []Entry {
	t.Helper()
	want := int(s.Stats().Records)
	ctx := waitCtx(t)
	var out []Entry
	for len(out) < want {
		es, err := s.Next(ctx, want-len(out))
		if err != nil {
			t.Fatalf("Next after %d of %d records: %v", len(out), want, err)
		}
		out = append(out, es...)
	}
	assertNothingMore(t, s)
	return out
}

// assertNothingMore checks that Next has no record to return now.
func assertNothingMore(t testing.TB, s *Spool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if es, err := s.Next(ctx, 1); err != context.Canceled {
		t.Fatalf("Next on a drained spool = %d entries, %v; want context.Canceled", len(es), err)
	}
}

func contents(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Data)
	}
	return out
}

// metricValue reads a counter or gauge from a registry: the series with
// the given label pairs (name, value, ...).
func metricValue(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v not registered", name, labels)
	return 0
}

// dirBytes sums the sizes of the segment files in dir.
func dirBytes(t testing.TB, dir string) (bytes int64, segments int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, ok := parseSegmentName(e.Name()); !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		bytes += fi.Size()
		segments++
	}
	return bytes, segments
}

// copyDir copies the regular files of src (not LOCK) into a new dir.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == lockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
