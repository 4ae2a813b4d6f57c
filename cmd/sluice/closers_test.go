package main

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
)

// The steps run last pushed first, each once.
func TestClosersRunInReverse(t *testing.T) {
	var ran []int
	var c closers
	for i := range 4 {
		c.push(func() { ran = append(ran, i) })
	}
	c.close()
	c.close()
	if want := []int{3, 2, 1, 0}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// A start that fails part way closes what had started, in reverse, and
// nothing it had not reached.
func TestClosersOnFailedStart(t *testing.T) {
	var ran []string
	start := func(c *closers, failAt int) error {
		for i, name := range []string{"producer", "admission", "server"} {
			if i == failAt {
				return errors.New(name + " refused")
			}
			c.push(func() { ran = append(ran, name) })
		}
		return nil
	}
	var c closers
	if err := start(&c, 2); err == nil {
		t.Fatal("start did not fail")
	}
	c.close()
	if want := []string{"admission", "producer"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// A process stops its pipeline before its late steps, each in reverse.
func TestProcessClosesPipelineFirst(t *testing.T) {
	var ran []string
	p := newProcess(slog.New(slog.DiscardHandler))
	p.late.push(func() { ran = append(ran, "sink") })
	p.late.push(func() { ran = append(ran, "admin") })
	p.pipeline.push(func() { ran = append(ran, "spool") })
	p.pipeline.push(func() { ran = append(ran, "producer") })
	p.close()
	if want := []string{"producer", "spool", "admin", "sink"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
