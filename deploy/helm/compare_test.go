package helm_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/hasher"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// givenToTheChart are the overlay's objects the chart does not render: it
// mounts them by name (values secrets.*, contracts.configMap,
// gatewayAPI.caConfigMap), since their content is the operator's, and it
// installs into a namespace that exists (helm --create-namespace).
func givenToTheChart(kind, name string) bool {
	switch kind {
	case "Secret", "Namespace":
		return true
	case "ConfigMap":
		return name == "sluice-contracts" || name == "sluice-gateway-ca"
	}
	return false
}

// helmLabels are the labels the chart adds to its objects' metadata that
// kustomize does not: they name the release and the chart.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// object is one rendered object, normalised for the comparison: decoded
// strictly and encoded again (so that 1 and "1" CPUs, or 0440 and 288,
// compare equal), the sluice configs parsed.
type object map[string]any

func (o object) key() string {
	md, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%s/%v", o["kind"], md["name"])
}

func normalise(t *testing.T, y []byte) (object, error) {
	t.Helper()
	typed, err := decodeStrict(t, y)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(typed)
	if err != nil {
		return nil, err
	}
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if o["kind"] == "ConfigMap" {
		data, _ := o["data"].(map[string]any)
		for k, v := range data {
			if !strings.HasSuffix(k, ".yaml") {
				continue
			}
			var parsed any
			if err := yaml.Unmarshal([]byte(v.(string)), &parsed); err != nil {
				return nil, fmt.Errorf("ConfigMap data %s: %w", k, err)
			}
			data[k] = parsed
		}
	}
	return o, nil
}

// overlayObjects renders the example overlay, without what is given to the
// chart, and with each generated name's content hash taken off, wherever
// the name is used.
func overlayObjects(t *testing.T) map[string]object {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), exampleOverlay)
	if err != nil {
		t.Fatal(err)
	}
	// A generated name is name-h, h the hash of the object as it is named
	// name (kustomize's hasher, which reads kind, name and data).
	hashed := map[string]string{}
	for _, r := range m.Resources() {
		name := r.GetName()
		i := strings.LastIndexByte(name, '-')
		if (r.GetKind() != "ConfigMap" && r.GetKind() != "Secret") || i < 0 {
			continue
		}
		c := r.DeepCopy()
		if err := c.SetName(name[:i]); err != nil {
			t.Fatal(err)
		}
		if h, err := c.Hash(&hasher.Hasher{}); err == nil && h == name[i+1:] {
			hashed[name] = name[:i]
		}
	}
	if len(hashed) == 0 {
		t.Fatal("the overlay generates no hashed name: the comparison's unhashing is untested")
	}
	out := map[string]object{}
	for _, r := range m.Resources() {
		if givenToTheChart(r.GetKind(), nameOf(r.GetName(), hashed)) {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		o, err := normalise(t, y)
		if err != nil {
			t.Fatalf("%s %s: %v", r.GetKind(), r.GetName(), err)
		}
		o = unhash(map[string]any(o), hashed).(map[string]any)
		out[o.key()] = o
	}
	return out
}

func nameOf(name string, hashed map[string]string) string {
	if n, ok := hashed[name]; ok {
		return n
	}
	return name
}

// unhash replaces every string that is a hashed name with the name.
func unhash(v any, hashed map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = unhash(x, hashed)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = unhash(x, hashed)
		}
		return v
	case string:
		if n, ok := hashed[v]; ok {
			return n
		}
		return v
	}
	return v
}

// chartObjects renders the chart with vals, without the labels Helm adds
// and the pods' config checksum (kustomize rolls the pods by the config's
// hashed name instead).
func chartObjects(t *testing.T, vals map[string]any) map[string]object {
	t.Helper()
	docs, err := renderChart(t, chartDir, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]object{}
	for _, d := range docs {
		o, err := normalise(t, d)
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		md := o["metadata"].(map[string]any)
		if labels, ok := md["labels"].(map[string]any); ok {
			for _, l := range helmLabels {
				delete(labels, l)
			}
		}
		if spec, ok := o["spec"].(map[string]any); ok {
			if tmpl, ok := spec["template"].(map[string]any); ok {
				tmd := tmpl["metadata"].(map[string]any)
				if ann, ok := tmd["annotations"].(map[string]any); ok {
					delete(ann, "checksum/config")
					if len(ann) == 0 {
						delete(tmd, "annotations")
					}
				}
			}
		}
		out[o.key()] = o
	}
	return out
}

// differences lists where the two sets of objects differ: objects one has
// and the other lacks, and each differing field by its path.
func differences(kustomize, chart map[string]object) []string {
	var diffs []string
	for k, o := range kustomize {
		c, ok := chart[k]
		if !ok {
			diffs = append(diffs, k+": rendered by kustomize, not by the chart")
			continue
		}
		diffs = append(diffs, diffValues(k, map[string]any(o), map[string]any(c))...)
	}
	for k := range chart {
		if _, ok := kustomize[k]; !ok {
			diffs = append(diffs, k+": rendered by the chart, not by kustomize")
		}
	}
	sort.Strings(diffs)
	return diffs
}

func diffValues(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var out []string
		for _, k := range slices.Sorted(mapsKeys(keys)) {
			out = append(out, diffValues(path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diffValues(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return []string{fmt.Sprintf("%s: kustomize %s, chart %s", path, ja, jb)}
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestChartMatchesOverlay: the chart with ci/example-values.yaml renders the
// example overlay's objects, field for field.
func TestChartMatchesOverlay(t *testing.T) {
	k := overlayObjects(t)
	c := chartObjects(t, readValues(t, exampleValues))
	for _, d := range differences(k, c) {
		t.Error(d)
	}
	if len(k) < 20 {
		t.Errorf("compared %d objects: the overlay renders fewer than expected", len(k))
	}
	t.Logf("compared %d objects", len(k))
}

// TestComparisonSeesDrift: the comparison finds a setting the chart
// changes, an object it leaves out, and a field of the overlay that
// changes.
func TestComparisonSeesDrift(t *testing.T) {
	k := overlayObjects(t)
	vals := readValues(t, exampleValues)
	vals["gateway"] = map[string]any{"replicas": 2}
	vals["prometheusRule"] = map[string]any{"enabled": false}
	diffs := strings.Join(differences(k, chartObjects(t, vals)), "\n")
	for _, want := range []string{
		"StatefulSet/sluice-gateway.spec.replicas: kustomize 3, chart 2",
		"PrometheusRule/sluice: rendered by kustomize, not by the chart",
	} {
		if !strings.Contains(diffs, want) {
			t.Errorf("differences do not say %q:\n%s", want, diffs)
		}
	}

	c := chartObjects(t, readValues(t, exampleValues))
	svc := k["Service/sluice-gateway"]["spec"].(map[string]any)
	svc["ports"] = append(svc["ports"].([]any), map[string]any{"name": "admin", "port": 9100})
	diffs = strings.Join(differences(k, c), "\n")
	if !strings.Contains(diffs, "Service/sluice-gateway.spec.ports") {
		t.Errorf("an admin port added on the overlay's side is not a difference:\n%s", diffs)
	}
}
