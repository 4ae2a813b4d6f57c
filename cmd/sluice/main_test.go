package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every command answers -h and --help with its usage and exit status 0,
// and starts nothing.
func TestHelpExitsZero(t *testing.T) {
	commands := [][]string{
		{}, {"dev"}, {"gateway"}, {"consumer"}, {"check"},
		{"contracts"}, {"contracts", "diff"}, {"contracts", "list"},
		{"dlq"}, {"dlq", "list"}, {"dlq", "show"}, {"dlq", "replay"},
		{"sink"}, {"sink", "migrate"}, {"sink", "recent"},
		{"hash-key"}, {"spool"}, {"spool", "inspect"},
		{"loadgen"}, {"loadgen", "serve-baseline"}, {"kfake"},
	}
	for _, cmd := range commands {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string{}, cmd...), flag)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != 0 {
				t.Errorf("sluice %s: exit %d, err %v, stderr %q", strings.Join(args, " "), code, err, stderr.String())
				continue
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(strings.ToLower(out), "usage") {
				t.Errorf("sluice %s printed no usage: %q", strings.Join(args, " "), out)
			}
		}
	}
}

// A missing or unknown command is an error, not a help request.
func TestNoCommandIsAnError(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}} {
		var stdout, stderr bytes.Buffer
		if code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr); code != 2 {
			t.Errorf("sluice %v: exit %d, want 2", args, code)
		}
	}
}

// A help flag or word in an argument's place is that argument.
func TestHelpWordIsAnArgument(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"hash-key", "help"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(stdout.String()); got != hashKey("help") {
		t.Errorf("sluice hash-key help printed %q, want the key's hash", got)
	}
}
