//go:build !sluicebench

package main

import (
	"log/slog"

	"github.com/sluicehq/sluice/gateway"
)

// benchGatewayOptions is empty in a production build: no environment and no
// config can turn validation off (see bench_on.go).
func benchGatewayOptions(*slog.Logger) []gateway.Option { return nil }
