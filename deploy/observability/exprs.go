package observability

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is a PromQL expression and where it was found.
type Expr struct {
	Where  string
	PromQL string
	// Dashboard is set for a panel target: its selectors filter on the
	// dashboard's namespace and job variables (written NamespaceVar and
	// JobVar in PromQL) rather than aggregate by them.
	Dashboard bool
	// Variable is set for a dashboard variable's selector.
	Variable bool
}

// Exprs is what the rule files and the dashboard query, and the names the
// recording rules define.
type Exprs struct {
	Queries  []Expr
	Recorded map[string]bool
}

var promql = parser.NewParser(parser.Options{})

// LoadRules reads Prometheus rule files: their expressions, and the names
// their recording rules define. rulefmt also parses every expression.
func LoadRules(into *Exprs, paths ...string) error {
	if into.Recorded == nil {
		into.Recorded = map[string]bool{}
	}
	for _, path := range paths {
		groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				name := r.Alert
				if r.Record != "" {
					name = r.Record
					into.Recorded[r.Record] = true
				}
				into.Queries = append(into.Queries, Expr{Where: fmt.Sprintf("%s: %s: %s", path, g.Name, name), PromQL: r.Expr})
			}
		}
	}
	return nil
}

// dashboard is what the checks read of a Grafana dashboard.
type dashboard struct {
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type dashPanel struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// grafanaVars are what Grafana substitutes in a query, with values that
// keep it valid PromQL.
var grafanaVars = strings.NewReplacer(
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "6h", "$__range", "6h",
	"${namespace}", NamespaceVar, "$namespace", NamespaceVar,
	"${job}", JobVar, "$job", JobVar,
	"${source}", ".*", "$source", ".*",
	"${partner}", ".*", "$partner", ".*",
)

// NamespaceVar and JobVar stand for the dashboard's $namespace and $job
// in the PromQL the checks parse.
const (
	NamespaceVar = "dashboard-variable-namespace"
	JobVar       = "dashboard-variable-job"
)

var labelValues = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*\w+\s*\)$`)

// LoadDashboard reads a dashboard: every panel target's expression, and
// the metric selector of every label_values variable, with Grafana's
// variables replaced.
func LoadDashboard(into *Exprs, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var walk func(ps []dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				into.Queries = append(into.Queries, Expr{Where: fmt.Sprintf("%s: panel %q target %s", path, p.Title, t.RefID), PromQL: grafanaVars.Replace(t.Expr), Dashboard: true})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			return fmt.Errorf("%s: variable %s: %q is not label_values(selector, label)", path, v.Name, v.Definition)
		}
		into.Queries = append(into.Queries, Expr{Where: fmt.Sprintf("%s: variable %s", path, v.Name), PromQL: grafanaVars.Replace(m[1]), Variable: true})
	}
	return nil
}

// Names parses e and returns the metric names its selectors name.
func Names(e Expr) ([]string, error) {
	if strings.Contains(e.PromQL, "$") {
		return nil, fmt.Errorf("%s: a template variable is left: %s", e.Where, e.PromQL)
	}
	ast, err := promql.ParseExpr(e.PromQL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Where, err)
	}
	var names []string
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type.String() == "=" {
					name = m.Value
				}
			}
		}
		if name == "" {
			err = errors.Join(err, fmt.Errorf("%s: a selector without a metric name: %s", e.Where, vs))
			return nil
		}
		names = append(names, name)
		return nil
	})
	return names, err
}

// Missing returns, for each expression, the metric names it references
// that are neither in exported (the names sluice's scrapes hold, histogram
// series names included) nor recorded by a rule: "where: name" lines,
// sorted. Parse errors are returned as errors.
func Missing(x Exprs, exported map[string]bool) ([]string, error) {
	var missing []string
	var errs []error
	for _, e := range x.Queries {
		names, err := Names(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			if !exported[n] && !x.Recorded[n] {
				missing = append(missing, e.Where+": "+n)
			}
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing), errors.Join(errs...)
}
