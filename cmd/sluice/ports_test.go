package main

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/admin"
)

// defaultAddrs are the addresses sluice listens on when a config or a flag
// leaves one unset: the gateway's gRPC and REST (also `sluice dev`'s
// defaults), the gateway's admin listener and the consumer's.
func defaultAddrs() []string {
	g := gateway.NewDefaultConfig()
	return []string{g.GRPCAddr, g.HTTPAddr, admin.DefaultGatewayAddr, admin.DefaultConsumerAddr}
}

// holdDefaultPorts holds every default address until the test ends, as a
// `sluice dev` with default flags beside the tests does: a test that lets
// a listener take a default instead of a free port then fails at once with
// "address already in use". An address something else holds already (a
// running `sluice dev`) stays held by that. It is for a few short tests
// only: while it holds them, a `sluice dev` started beside the tests
// cannot take its ports.
func holdDefaultPorts(t *testing.T) {
	t.Helper()
	for _, addr := range defaultAddrs() {
		l, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			t.Fatalf("holding %s: %v", addr, err)
		}
		t.Cleanup(func() { l.Close() })
	}
}
