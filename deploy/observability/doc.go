// Package observability checks sluice's Prometheus rules and Grafana
// dashboard against sluice itself: every PromQL expression parses, every
// metric it names is exported by a running `sluice dev` (gateway,
// pollers, in-process Kafka) or `sluice consumer`, every rule keeps and
// every dashboard query filters on namespace and job (Unscoped), and
// every alert links its runbook in docs/alerts.md (Runbooks). It also
// generates the rules' copies that kustomize and the chart carry: the
// PrometheusRule object and the chart's files (Generated). It is a nested
// module so that the product's go.mod does not gain the Prometheus
// server's dependencies.
package observability

// Refreshes deploy/kubernetes/monitoring/prometheusrule.yaml and
// deploy/helm/sluice/files/{recording,alerts}.rules.yaml from
// deploy/prometheus; TestGeneratedCurrent fails when they are stale.
//go:generate go run ./gen
