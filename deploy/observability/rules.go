package observability

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The plain rule files, the source of the generated copies; paths are
// relative to the deploy directory.
const (
	RecordingRules = "prometheus/recording.rules.yaml"
	AlertRules     = "prometheus/alerts.rules.yaml"
)

// PrometheusRuleFile is the PrometheusRule object (Prometheus Operator)
// that kustomize carries; the chart carries the plain files under
// helmFiles.
const (
	PrometheusRuleFile = "kubernetes/monitoring/prometheusrule.yaml"
	helmFiles          = "helm/sluice/files"
)

// GenerateCommand refreshes the generated files.
const GenerateCommand = "cd deploy && go generate ./observability"

// Generated returns the files generated from the plain rule files, by
// path relative to deployDir: the PrometheusRule object, and the chart's
// copies of the plain files.
func Generated(deployDir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	var groups []monitoringv1.RuleGroup
	for _, src := range []string{RecordingRules, AlertRules} {
		raw, err := os.ReadFile(filepath.Join(deployDir, src))
		if err != nil {
			return nil, err
		}
		var f struct {
			Groups []monitoringv1.RuleGroup `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		groups = append(groups, f.Groups...)
		header := fmt.Sprintf("# Generated from deploy/%s by `%s`; do not edit.\n", src, GenerateCommand)
		out[filepath.ToSlash(filepath.Join(helmFiles, filepath.Base(src)))] = append([]byte(header), raw...)
	}
	obj, err := yaml.Marshal(PrometheusRule(groups))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# sluice's recording rules and alerts as a Prometheus Operator PrometheusRule.\n")
	fmt.Fprintf(&b, "# Generated from deploy/%s and deploy/%s\n# by `%s`; do not edit.\n", RecordingRules, AlertRules, GenerateCommand)
	fmt.Fprintf(&b, "# The alerts' runbooks: docs/alerts.md.\n")
	b.Write(obj)
	out[PrometheusRuleFile] = b.Bytes()
	return out, nil
}

// PrometheusRule is the object that holds groups.
func PrometheusRule(groups []monitoringv1.RuleGroup) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		TypeMeta: metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PrometheusRuleKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "sluice",
			Labels: map[string]string{"app.kubernetes.io/name": "sluice", "app.kubernetes.io/component": "monitoring"},
		},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: groups},
	}
}
