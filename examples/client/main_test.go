package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/gatewaytest"
)

// TestRun runs the example against a real gateway whose source takes 100
// events at once and 2000 a second: the bad order is refused with its
// violation and never retried, and the burst is rate limited, sent again
// after retry_after, and accepted whole.
func TestRun(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{Serve: true, Configure: func(cfg *gateway.Config) {
		cfg.Sources[0].Rate, cfg.Sources[0].Burst = 2000, 100
		cfg.Limits.MaxEventsPerRequest = 100
	}})
	var out strings.Builder
	if err := run(t.Context(), g.Server.GRPCAddr(), gatewaytest.Key, 1000, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\S+  ACCEPTED  KAFKA  ingest\.examples\.shop\.v1\.OrderPlaced\[0\]@\d+$`),
		regexp.MustCompile(`(?m)^\S+  REJECTED  SCHEMA_VIOLATION, attempts 1:\n    payload\.customer\.email \(string\.email\): `),
		regexp.MustCompile(`(?m)burst of 1000 orders in \S+s: map\[ACCEPTED:1000\]; sent again after RATE_LIMITED: [1-9]\d*, most attempts for one order: ([2-9]|[1-9]\d+)$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("the output lacks %s", want)
		}
	}
}

// TestDocsShowThisProgram: docs/client.md shows this program as it is.
func TestDocsShowThisProgram(t *testing.T) {
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "client.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```go\n"+string(program)+"```\n") {
		t.Error("docs/client.md does not show examples/client/main.go as it is: paste it again")
	}
}
