package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
)

// TestLogDecodersRules: the start-up log says, per contract, which fields'
// rules run compiled and which protovalidate checks, and why.
func TestLogDecodersRules(t *testing.T) {
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logDecoders(slog.New(slog.NewTextHandler(&buf, nil)), registry)
	var line string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(l, `msg="contract rules"`) && strings.Contains(l, "type="+shopType) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no contract rules line for %s in:\n%s", shopType, buf.String())
	}
	// total_cents has an int64 range (compiled); the message's own CEL
	// rule stays with protovalidate.
	compiled, left, ok := strings.Cut(line, " protovalidate=")
	if !ok || !strings.Contains(compiled, "compiled=") {
		t.Fatalf("contract rules line lacks compiled= or protovalidate=:\n%s", line)
	}
	if !strings.Contains(compiled, "examples.shop.v1.OrderPlaced.total_cents") {
		t.Errorf("total_cents not listed as compiled:\n%s", line)
	}
	if !strings.Contains(left, shopType+" (message rules in CEL)") {
		t.Errorf("the message's CEL rule not listed as left to protovalidate:\n%s", line)
	}
	if strings.Contains(left, "total_cents") {
		t.Errorf("total_cents listed as left to protovalidate:\n%s", line)
	}
}
