//go:build sluicebench

package gateway_test

import (
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
// REJECTED (SCHEMA_VIOLATION) without WithoutValidation and ACCEPTED with
// it, in both payload forms; a payload that does not decode is MALFORMED
// either way, and the envelope's own rules still apply. The option exists
// only in benchmark builds: go test -tags sluicebench.
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
		t.Run(fmt.Sprintf("without_validation=%v", skip), func(t *testing.T) {
			var opts []gateway.Option
			if skip {
				opts = append(opts, gateway.WithoutValidation())
			}
			h := newHarness(t, harnessOpts{service: opts})
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
