package main

// docs/metrics.md lists every metric the gateway and the consumer export,
// from the registries the two processes build (TestMetricsDoc, which
// fails while the page is stale).
//go:generate go test -run ^TestMetricsDoc$ . -args -update-metrics-doc
