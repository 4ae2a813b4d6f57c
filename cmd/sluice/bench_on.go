//go:build sluicebench

package main

import (
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/gateway"
)

// benchGatewayOptions are the benchmark switches of a binary built with
// the sluicebench tag (scripts/bench.sh builds one):
// SLUICE_BENCH_SKIP_VALIDATION=1 decodes payloads without their
// contracts' rules, to price validation.
func benchGatewayOptions(log *slog.Logger) []gateway.Option {
	if os.Getenv("SLUICE_BENCH_SKIP_VALIDATION") != "1" {
		return nil
	}
	log.Warn("benchmark build: contract rules are not evaluated (SLUICE_BENCH_SKIP_VALIDATION=1)")
	return []gateway.Option{gateway.WithoutValidation()}
}
