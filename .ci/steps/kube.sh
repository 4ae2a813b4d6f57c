#!/usr/bin/env bash
# kube: the Kubernetes deploy files render from a clean checkout and pass
# strict schema validation, offline once the tools are installed:
#   - the kustomize base and the example overlay render (kubectl kustomize
#     when kubectl is on PATH, else deploy's Go renderer, the same engine);
#   - the Helm chart passes `helm lint --strict` and `helm template`, with its
#     defaults and with ci/example-values.yaml;
#   - every rendered object passes kubernetes-validate --strict (PyPI; its
#     bundled schemas) and kubeconform -strict (pointed at the same bundled
#     schemas), and a manifest with an unknown field fails both.
# CRDs (ServiceMonitor, PrometheusRule, Gateway API) have no bundled schema:
# both validators are told to skip exactly those kinds, and deploy's Go tests
# (deploy/kubernetes, deploy/helm) decode them strictly into the
# prometheus-operator and gateway-api Go types instead.
# Run from the repository root. Tools go to ${TMPDIR:-/tmp}/sluice-ci-kube.
set -euo pipefail

HELM_VERSION=v4.3.2
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBECONFORM_VERSION=v0.8.0
KUBE_VERSION=1.37.0
CRD_KINDS=(ServiceMonitor PrometheusRule Gateway HTTPRoute GRPCRoute BackendTLSPolicy)

root=$(pwd)
tools=${TMPDIR:-/tmp}/sluice-ci-kube
out=$tools/out
mkdir -p "$tools/bin" "$out"

if [ ! -x "$tools/bin/helm" ] || [ ! -e "$tools/bin/.helm-$HELM_VERSION" ]; then
  GOBIN=$tools/bin go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
  rm -f "$tools/bin"/.helm-*; touch "$tools/bin/.helm-$HELM_VERSION"
fi
if [ ! -x "$tools/bin/kubeconform" ] || [ ! -e "$tools/bin/.kubeconform-$KUBECONFORM_VERSION" ]; then
  GOBIN=$tools/bin go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  rm -f "$tools/bin"/.kubeconform-*; touch "$tools/bin/.kubeconform-$KUBECONFORM_VERSION"
fi
if [ "$("$tools/venv/bin/pip" show kubernetes-validate 2>/dev/null | sed -n 's/^Version: //p')" != "$KUBERNETES_VALIDATE_VERSION" ]; then
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
helm=$tools/bin/helm
kubeconform=$tools/bin/kubeconform
kv=$tools/venv/bin/kubernetes-validate

# kubeconform reads kubernetes-validate's bundled strict schemas; their
# $refs are absolute to kubernetes-validate's own registry (/api/...), so a
# copy points them at the copied _definitions.json.
bundled=$("$tools/venv/bin/python" -c 'import kubernetes_validate, os; print(os.path.dirname(kubernetes_validate.__file__))')/kubernetes-json-schema/v$KUBE_VERSION-local-strict
schemas=$tools/schemas-v$KUBE_VERSION
if [ ! -e "$schemas/.done" ]; then
  rm -rf "$schemas"; mkdir -p "$schemas"
  for f in "$bundled"/*.json; do
    sed "s#\"/api/_definitions.json#\"file://$schemas/_definitions.json#g" "$f" >"$schemas/$(basename "$f")"
  done
  touch "$schemas/.done"
fi

render() {
  if command -v kubectl >/dev/null; then
    kubectl kustomize "$1"
  else
    (cd deploy && go run ./kubernetes/render "$root/$1")
  fi
}
count() { grep -c '^kind:' "$1"; }

echo "kube: render (kustomize: $(command -v kubectl >/dev/null && echo "kubectl $(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p')" || echo "deploy/kubernetes/render"))"
render deploy/kubernetes/base >"$out/base.yaml"
render deploy/kubernetes/overlays/example >"$out/overlay.yaml"
echo "  deploy/kubernetes/base: $(count "$out/base.yaml") objects"
echo "  deploy/kubernetes/overlays/example: $(count "$out/overlay.yaml") objects"

echo "kube: helm $HELM_VERSION lint and template"
"$helm" lint --strict deploy/helm/sluice
"$helm" lint --strict deploy/helm/sluice -f deploy/helm/sluice/ci/example-values.yaml
"$helm" template sluice deploy/helm/sluice --namespace sluice >"$out/chart-defaults.yaml"
"$helm" template sluice deploy/helm/sluice --namespace sluice -f deploy/helm/sluice/ci/example-values.yaml >"$out/chart-example.yaml"
echo "  chart, defaults: $(count "$out/chart-defaults.yaml") objects"
echo "  chart, ci/example-values.yaml: $(count "$out/chart-example.yaml") objects"

# A Service with a field the API does not have: both validators must
# refuse it, or they are not strict.
cat >"$out/unknown-field.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: strictness-check
spec:
  ports:
    - port: 80
  selector:
    app: x
  sessionAffinityTimeout: 10
YAML

crd_pattern=$(IFS='|'; echo "${CRD_KINDS[*]}")
validate() {
  local f=$1 log
  log=$("$kv" --strict -k "$KUBE_VERSION" --quiet "$f" 2>&1) || { echo "$log"; return 1; }
  # Only the CRDs may lack a schema.
  if echo "$log" | grep -v -E "Couldn't find schema for kind ($crd_pattern) with" | grep -q .; then
    echo "$log"; return 1
  fi
  "$kubeconform" -strict -summary -kubernetes-version "$KUBE_VERSION" \
    -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    -skip "$(IFS=,; echo "${CRD_KINDS[*]}")" "$f"
}

echo "kube: strict schema validation (kubernetes-validate $KUBERNETES_VALIDATE_VERSION, kubeconform $KUBECONFORM_VERSION, Kubernetes $KUBE_VERSION; skipped, decoded strictly by deploy's Go tests: ${CRD_KINDS[*]})"
if "$kv" --strict -k "$KUBE_VERSION" --quiet "$out/unknown-field.yaml" >/dev/null 2>&1; then
  echo "kubernetes-validate --strict accepted a Service with an unknown field" >&2; exit 1
fi
if "$kubeconform" -strict -kubernetes-version "$KUBE_VERSION" -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$out/unknown-field.yaml" >/dev/null 2>&1; then
  echo "kubeconform -strict accepted a Service with an unknown field" >&2; exit 1
fi
echo "  a Service with an unknown field: refused by both"
for f in base overlay chart-defaults chart-example; do
  echo "  $f.yaml:"
  validate "$out/$f.yaml" | sed 's/^/    /'
done
echo "kube: ok"
