package tracing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocExampleIsTheTestsBlock: the tracing block docs/tracing.md shows is
// the one this test gives the gateway and the consumer, the endpoint
// aside; and the page has the markers -write-trace-doc writes between.
func TestDocExampleIsTheTestsBlock(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "tracing.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	block := (&system{otlpGRPC: "127.0.0.1:4317"}).tracingBlock()
	if !strings.Contains(doc, "```yaml\n"+block+"```\n") {
		t.Errorf("docs/tracing.md does not show the test's tracing block:\n%s", block)
	}
	if i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd); i < 0 || j < i {
		t.Errorf("docs/tracing.md lacks the markers %q ... %q", docBegin, docEnd)
	}
}
