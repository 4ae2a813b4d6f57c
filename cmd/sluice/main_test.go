package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"slices"
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

// The package doc comment lists the commands as the usage text does,
// line for line: both come from the table of commands.
func TestDocCommentListsCommands(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(f.Doc.Text(), "\n") {
		if after, ok := strings.CutPrefix(l, "\t"); ok {
			listed = append(listed, after)
		}
	}
	want := commandLines()
	if !slices.Equal(listed, want) {
		var b strings.Builder
		for _, l := range want {
			b.WriteString("//\t" + l + "\n")
		}
		t.Errorf("main.go's doc comment lists\n%s\nwant, from the table of commands:\n%s", strings.Join(listed, "\n"), b.String())
	}
}

// Every command of the table is in the usage text, is dispatched by its
// name, and answers -h with its usage; no two share a name.
func TestEveryCommandIsListedAndDispatched(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if seen[c.name] {
			t.Errorf("command %q is in the table twice", c.name)
		}
		seen[c.name] = true
		if len(c.synopses) == 0 || c.run == nil {
			t.Errorf("command %q has no synopsis or no run", c.name)
		}
		for _, s := range c.synopses {
			if !strings.HasPrefix(s[0], "sluice "+c.name) {
				t.Errorf("command %q: synopsis %q does not call it", c.name, s[0])
			}
			if !strings.Contains(usage, "  "+s[0]+" ") {
				t.Errorf("command %q: the usage text lacks %q", c.name, s[0])
			}
		}
		if got, ok := lookup(c.name); !ok || got.name != c.name {
			t.Errorf("command %q is not dispatched", c.name)
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{c.name, "-h"}, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 0 {
			t.Errorf("sluice %s -h: exit %d, err %v", c.name, code, err)
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(strings.ToLower(out), "usage") {
			t.Errorf("sluice %s -h printed no usage: %q", c.name, out)
		}
	}
}
