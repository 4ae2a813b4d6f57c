// Package gatewaytest runs a real gateway for the tests of other packages:
// the example contracts, an in-process Kafka (kfake) seeded with their
// topics, and the producer and admission wired as `sluice dev` wires them.
// Everything it starts is stopped by the test's cleanup.
package gatewaytest
