package observability

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"sigs.k8s.io/yaml"
)

const (
	deployDir = ".."
	alertsDoc = "../../docs/alerts.md"
)

// TestGeneratedCurrent: the PrometheusRule object and the chart's copies
// are what the generator writes from deploy/prometheus's rule files.
func TestGeneratedCurrent(t *testing.T) {
	files, err := Generated(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d generated files, want the PrometheusRule and two chart copies", len(files))
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(deployDir, path))
		if err != nil {
			t.Errorf("%v: run `%s`", err, GenerateCommand)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/%s is stale: run `%s`", path, GenerateCommand)
		}
	}
}

// TestPrometheusRuleObject: the committed object decodes strictly as a
// monitoring.coreos.com/v1 PrometheusRule, its spec passes the checks of
// `promtool check rules`, and it holds every rule of the plain files.
func TestPrometheusRuleObject(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, PrometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	var obj monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(raw, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" || obj.Name == "" {
		t.Fatalf("%s/%s %q, want a named monitoring.coreos.com/v1 PrometheusRule", obj.APIVersion, obj.Kind, obj.Name)
	}
	spec, err := yaml.Marshal(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	var got, want []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			got = append(got, g.Name+" "+r.Record+r.Alert+" "+r.Expr)
		}
	}
	for _, path := range ruleFiles {
		plain, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, g := range plain.Groups {
			for _, r := range g.Rules {
				want = append(want, g.Name+" "+r.Record+r.Alert+" "+r.Expr)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the PrometheusRule holds %d rules, the plain files %d, or they differ: run `%s`", len(got), len(want), GenerateCommand)
	}
}

// TestRunbooks: every alert links its runbook in docs/alerts.md, and every
// runbook there is an alert's.
func TestRunbooks(t *testing.T) {
	problems, err := Runbooks(alertsDoc, ruleFiles...)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		t.Fatalf("alerts and runbooks disagree:\n%s", strings.Join(problems, "\n"))
	}
}

// TestRunbooksChecksItself: an alert without runbook_url, one with the
// wrong URL, one without a heading, and a heading without an alert are
// each reported.
func TestRunbooksChecksItself(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "alerts.rules.yaml")
	writeFile(t, rules, `groups:
  - name: g
    rules:
      - alert: Good
        expr: vector(1)
        annotations: {runbook_url: "`+RunbookBase+`good"}
      - alert: NoURL
        expr: vector(1)
      - alert: WrongURL
        expr: vector(1)
        annotations: {runbook_url: "`+RunbookBase+`other"}
      - alert: NoHeading
        expr: vector(1)
        annotations: {runbook_url: "`+RunbookBase+`noheading"}
`)
	doc := filepath.Join(dir, "alerts.md")
	writeFile(t, doc, "# Alerts\n## SLOs\n### NoHeading\n## Alerts\n### Good\n### NoURL\n```\n### NotAHeading\n```\n### WrongURL\n### Orphan\n")
	problems, err := Runbooks(doc, rules)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(problems)
	got := strings.Join(problems, "\n")
	for _, want := range []string{
		"NoURL has no annotations.runbook_url",
		"WrongURL: runbook_url " + RunbookBase + "other",
		`no heading "### NoHeading"`,
		`heading "### Orphan" names no alert`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), got)
	}
}

// TestScoped: every selector of a sluice metric in the rules keeps
// namespace and job through every aggregation and matching above it, and
// every dashboard target filters on the namespace and job variables.
func TestScoped(t *testing.T) {
	x := loadAll(t)
	var dash, rules int
	for _, e := range x.Queries {
		if e.Dashboard {
			dash++
		} else if !e.Variable {
			rules++
		}
		found, err := Unscoped(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Error(f)
		}
	}
	if dash < 30 || rules < 50 {
		t.Fatalf("checked %d dashboard targets and %d rules", dash, rules)
	}
}

// TestUnscopedChecksItself: what mixes installs is reported, what keeps
// them apart is not.
func TestUnscopedChecksItself(t *testing.T) {
	ns, job := `namespace=~"`+NamespaceVar+`"`, `job=~"`+JobVar+`"`
	cases := []struct {
		name, promql string
		dashboard    bool
		unscoped     int
	}{
		{"plain selector", `sluice_spool_bytes / sluice_spool_max_bytes > 0.8`, false, 0},
		{"sum by both", `sum by (namespace, job, instance) (rate(sluice_events_total[5m]))`, false, 0},
		{"sum without others", `sum without (instance) (sluice_events_total)`, false, 0},
		{"sum by instance", `sum by (instance) (rate(sluice_events_total[5m]))`, false, 1},
		{"sum of all", `sum(rate(sluice_events_total[5m]))`, false, 1},
		{"without job", `max without (job) (sluice_poller_up)`, false, 1},
		{"inner keeps, outer drops", `sum by (topic) (max by (namespace, job, topic) (sluice_consumer_lag))`, false, 1},
		{"recorded", `sum(sluice:consumer_lag:sum_by_topic)`, false, 1},
		{"on ()", `sluice:a > 0 and on () sluice_admission_mode`, false, 2},
		{"on both", `sluice:a > 0 and on (namespace, job) count by (namespace, job) (sluice_admission_mode)`, false, 0},
		{"ignoring job", `sluice:a / ignoring (job) sluice:b`, false, 2},
		{"absent", `absent(sluice_events_total)`, false, 1},
		{"label_replace", `label_replace(sluice_events_total, "job", "x", "", "")`, false, 1},
		{"other metrics", `sum(up)`, false, 0},
		{"dashboard filters", `sum by (outcome) (rate(sluice_events_total{` + ns + `,` + job + `}[5m]))`, true, 0},
		{"dashboard without job", `sluice_spool_bytes{` + ns + `}`, true, 1},
		{"dashboard without either", `1 - sluice:ingest_errors:ratio_rate5m`, true, 2},
		{"dashboard with a fixed job", `sluice_spool_bytes{` + ns + `,job="sluice"}`, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found, err := Unscoped(Expr{Where: "case", PromQL: tc.promql, Dashboard: tc.dashboard})
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != tc.unscoped {
				t.Fatalf("found %d, want %d: %q", len(found), tc.unscoped, found)
			}
		})
	}
}

// TestDashboardVariables: the dashboard lets one pick a namespace and the
// jobs in it, and the job variable lists only the chosen namespace's.
func TestDashboardVariables(t *testing.T) {
	raw, err := os.ReadFile(dashFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			defs[v.Name] = v.Definition
		}
	}
	if m := labelValues.FindStringSubmatch(defs["namespace"]); m == nil || !strings.HasSuffix(defs["namespace"], "namespace)") {
		t.Errorf("variable namespace is %q, want label_values(a sluice metric, namespace)", defs["namespace"])
	}
	if !strings.Contains(defs["job"], `namespace=~"$namespace"`) || !strings.HasSuffix(defs["job"], "job)") {
		t.Errorf("variable job is %q, want label_values(a sluice metric{namespace=~\"$namespace\"}, job)", defs["job"])
	}
}
