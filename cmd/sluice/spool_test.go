package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/buffer"
)

// TestSpoolInspect: `sluice spool inspect DIR` reports a spool's segments,
// cursor and pending records without changing it.
func TestSpoolInspect(t *testing.T) {
	dir := t.TempDir()
	cfg := buffer.NewDefaultConfig(dir)
	cfg.MinFreeBytes = 1
	s, err := buffer.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), []byte("one"), []byte("two"), []byte("three")); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Next(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(entries[0].Pos); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"spool", "inspect", dir}, &out, &errs); err != nil {
		t.Fatalf("%v: %s", err, errs.String())
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"00000000000000000001.seg", "pending"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if err := run(context.Background(), []string{"spool", "inspect"}, &out, &errs); err == nil {
		t.Error("inspect without a directory succeeded")
	}
}
