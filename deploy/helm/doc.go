// Package helm holds the tests of sluice's Helm chart (sluice/): it lints
// as `helm lint --strict` does, renders as `helm template` does (a
// client-only dry-run install with helm.sh/helm/v4), decodes every object
// strictly into the Kubernetes API types, and compares the objects the chart
// renders with ci/example-values.yaml to those kustomize renders from
// deploy/kubernetes/overlays/example: the chart and the kustomize base must
// not drift apart.
//
// The package has no code of its own; it lives in the deploy module
// (deploy/go.mod) so that sluice does not depend on Helm's modules.
package helm
