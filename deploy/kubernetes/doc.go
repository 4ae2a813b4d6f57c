// Package kubernetes holds sluice's Kubernetes manifests (a kustomization)
// and the tests that hold them to sluice: the manifests are rendered as
// `kubectl apply -k` renders them, every object is decoded strictly into
// the Kubernetes API types, the sluice configs in the ConfigMap are checked
// by the sluice binary that deploy/Dockerfile builds, with the pods' files
// laid out as the kubelet mounts them, and the workloads are checked
// against those configs (spool volume, probe ports, memory, grace period).
//
// The package has no code of its own; it is a module apart from sluice's
// (deploy/go.mod) so that sluice does not depend on Kubernetes' modules.
package kubernetes
