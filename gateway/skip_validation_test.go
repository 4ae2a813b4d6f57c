package gateway_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/gateway"
	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestSkipValidation: a payload that decodes but breaks a contract rule is
// REJECTED (SCHEMA_VIOLATION) with skip_validation off and ACCEPTED with it
// on, in both payload forms; a payload that does not decode is MALFORMED
// either way, and the envelope's own rules still apply.
func TestSkipValidation(t *testing.T) {
	badJSON := setJSON(t, examples.LogLineJSON, "trace_id", "XYZ")
	var line logsv1.LogLine
	if err := protojson.Unmarshal(badJSON, &line); err != nil {
		t.Fatal(err)
	}
	badBinary, err := proto.Marshal(&line)
	if err != nil {
		t.Fatal(err)
	}
	undecodable := []byte{0x0a, 0xff} // field 1, length past the end

	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_validation=%v", skip), func(t *testing.T) {
			h := newHarness(t, harnessOpts{config: func(c *gateway.Config) { c.SkipValidation = skip }})
			now := h.clock.Now()
			out, err := h.publishGRPC(keyAll,
				ev{ID: "rule-json", Type: typeLog, Key: "svc", At: now, JSON: badJSON},
				ev{ID: "rule-binary", Type: typeLog, Key: "svc", At: now, Binary: badBinary},
				ev{ID: "undecodable", Type: typeLog, Key: "svc", At: now, Binary: undecodable},
				ev{ID: "bad id!", Type: typeLog, Key: "svc", At: now, JSON: examples.LogLineJSON},
			)
			if err != nil {
				t.Fatal(err)
			}
			res := out.GetResults()
			ruleOutcome := ingestv1.Outcome_REJECTED
			if skip {
				ruleOutcome = ingestv1.Outcome_ACCEPTED
			}
			wantOutcomes(t, res, ruleOutcome, ruleOutcome, ingestv1.Outcome_REJECTED, ingestv1.Outcome_REJECTED)
			if !skip {
				for _, i := range []int{0, 1} {
					if r := res[i].GetRejection(); r.GetReason() != ingestv1.Reason_SCHEMA_VIOLATION || r.GetViolations()[0].GetField() != "payload.trace_id" {
						t.Errorf("result %d: %v", i, r)
					}
				}
			}
			if r := res[2].GetRejection(); r.GetReason() != ingestv1.Reason_MALFORMED {
				t.Errorf("undecodable payload: %v", r)
			}
			if r := res[3].GetRejection(); r.GetReason() != ingestv1.Reason_SCHEMA_VIOLATION || r.GetViolations()[0].GetField() != "id" {
				t.Errorf("envelope rule: %v", r)
			}
		})
	}
}

// TestMemoryLimitConfig: a negative or tiny memory_limit is refused by
// name, and so is a dedup window that would not fit in a quarter of it;
// zero (no limit) and a bound with room pass. The runtime's soft limit
// leaves headroom below the bound.
func TestMemoryLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		limit      int64
		maxEntries int
		field      string // "" when the config is valid
	}{
		{-1, 1_000_000, "memory_limit"},
		{64 << 20, 1_000_000, "memory_limit"},
		{0, 1_000_000, ""},
		{512 << 20, 1_000_000, ""},
		{256 << 20, 1_000_000, "dedup.max_entries"},
		{256 << 20, 500_000, ""},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		cfg.Dedup.MaxEntries = tc.maxEntries
		err := cfg.Validate()
		var ce *gateway.ConfigError
		if (tc.field == "") != (err == nil) || (err != nil && (!errors.As(err, &ce) || ce.Field != tc.field)) {
			t.Errorf("memory_limit %d, max_entries %d: got %v, want an error on %q", tc.limit, tc.maxEntries, err, tc.field)
		}
	}
	for _, tc := range []struct{ limit, want int64 }{
		{0, 0},
		{512 << 20, 512<<20 - (512<<20)/10},
		{200 << 20, 152 << 20},
	} {
		cfg := testConfig()
		cfg.MemoryLimit = tc.limit
		if got := cfg.RuntimeMemoryLimit(); got != tc.want {
			t.Errorf("RuntimeMemoryLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
