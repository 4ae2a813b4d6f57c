// Package observability checks sluice's Prometheus rules and Grafana
// dashboard against sluice itself: every PromQL expression parses, and
// every metric it names is exported by a running `sluice dev` (gateway,
// pollers, in-process Kafka) or `sluice consumer`. It is a nested module
// so that the product's go.mod does not gain the Prometheus server's
// dependencies.
package observability
