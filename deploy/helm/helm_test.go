package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	chartDir       = "sluice"
	exampleValues  = "sluice/ci/example-values.yaml"
	exampleOverlay = "../kubernetes/overlays/example"
	// The release and namespace the comparison renders the chart as: the
	// overlay's namespace, and a release whose objects take its names.
	releaseName = "sluice"
	namespace   = "sluice"
)

// decodeStrict decodes one object into the API types of the kinds a sluice
// deployment holds: an unknown or duplicate field, or an unknown kind, is
// an error.
func decodeStrict(t *testing.T, y []byte) (runtime.Object, error) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, autoscalingv2.AddToScheme,
		networkingv1.AddToScheme, monitoringv1.AddToScheme, gatewayv1.Install,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(y, nil, nil)
	return obj, err
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// renderChart renders the chart at dir with vals as `helm template
// --namespace sluice sluice dir` does, and returns its objects' YAML.
func renderChart(t *testing.T, dir string, vals map[string]any) ([][]byte, error) {
	t.Helper()
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = releaseName
	install.Namespace = namespace
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*releasev1.Release)
	if !ok {
		return nil, fmt.Errorf("install returned a %T", rel)
	}
	var docs [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(r.Manifest, -1) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("rendered YAML: %w\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		docs = append(docs, []byte(doc))
	}
	return docs, nil
}

// renderOverlay renders dir as `kubectl kustomize` does.
func renderOverlay(t *testing.T, dir string) [][]byte {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, y)
	}
	return docs
}

func TestLint(t *testing.T) {
	for _, vals := range []struct {
		name string
		vals map[string]any
	}{{"defaults", nil}, {"example values", readValues(t, exampleValues)}} {
		t.Run(vals.name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			res := lint.Run([]string{chartDir}, vals.vals)
			for _, m := range res.Messages {
				t.Log(m.Error())
			}
			if len(res.Errors) > 0 {
				t.Fatalf("helm lint --strict: %v", res.Errors)
			}
		})
	}
}

// TestTemplateDecodesStrictly renders the chart with its defaults and with
// the example values, and decodes every object strictly.
func TestTemplateDecodesStrictly(t *testing.T) {
	for _, vals := range []struct {
		name string
		vals map[string]any
		min  int
	}{{"defaults", nil, 11}, {"example values", readValues(t, exampleValues), 20}} {
		t.Run(vals.name, func(t *testing.T) {
			docs, err := renderChart(t, chartDir, vals.vals)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) < vals.min {
				t.Fatalf("%d objects, want at least %d", len(docs), vals.min)
			}
			for _, d := range docs {
				if _, err := decodeStrict(t, d); err != nil {
					t.Errorf("%v\n%s", err, d)
				}
			}
		})
	}
}

// TestTemplateRefusesAWrongField shows that the strict decoding above
// catches a field the API server would drop, in a copy of the chart.
func TestTemplateRefusesAWrongField(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, chartDir, dir)
	p := filepath.Join(dir, "templates", "gateway.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := "  podManagementPolicy: OrderedReady\n"
	if !strings.Contains(string(b), old) {
		t.Fatalf("templates/gateway.yaml has no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, old+"  podManagement: Parallel\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := renderChart(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if _, err := decodeStrict(t, d); err != nil && strings.Contains(err.Error(), "podManagement") {
			return
		}
	}
	t.Fatal("a StatefulSet with an unknown field decoded")
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestValuesSchemaRefusesAMisspeltValue: values.schema.json closes the
// chart's own values, so a misspelt one stops helm instead of being
// ignored.
func TestValuesSchemaRefusesAMisspeltValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"unknown top-level value", map[string]any{"serviceMonitors": map[string]any{"enabled": true}}, "serviceMonitors"},
		{"unknown nested value", map[string]any{"gateway": map[string]any{"replica": 2}}, "replica"},
		{"wrong type", map[string]any{"gateway": map[string]any{"replicas": "three"}}, "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, chartDir, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render: err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
