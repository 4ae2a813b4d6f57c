// Package kubernetes holds sluice's kustomize deployment and the tests that
// hold it to sluice: base/ (the workloads, Services, NetworkPolicies and the
// sluice configs), monitoring/ and components/ (optional kustomize
// components: the Prometheus Operator's objects, an Ingress, the Gateway
// API) and overlays/example (all of them with the examples' contracts and
// committed SAMPLE secrets, so that it renders from a clean checkout).
//
// The tests render overlays/example as `kubectl kustomize` renders it,
// decode every object strictly into the Kubernetes, Prometheus Operator and
// Gateway API types, run `sluice check` of the binary deploy/Dockerfile
// builds on the configs in the ConfigMap, with the pods' files laid out as
// the kubelet mounts them, and check the workloads against those configs
// (spool volume, probe ports, memory, grace period) and the exposure
// against the admin port. render/ is a command that prints what `kubectl
// kustomize` prints, for machines without kubectl.
//
// The package has no code of its own; it is a module apart from sluice's
// (deploy/go.mod) so that sluice does not depend on Kubernetes' modules.
package kubernetes
