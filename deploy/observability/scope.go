package observability

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// ScopeLabels are the labels that tell installs apart in one Prometheus:
// a ServiceMonitor's scrapes carry the namespace, and job is the Service.
var ScopeLabels = []string{"namespace", "job"}

// Unscoped parses e and returns what in it mixes installs: for a rule, a
// selector of a sluice metric (sluice_* or a sluice:* recording rule)
// under an aggregation, a vector matching or a function that drops
// namespace or job; for a dashboard target, such a selector without the
// matchers namespace=~"$namespace" and job=~"$job". Variables' selectors
// are not checked.
func Unscoped(e Expr) ([]string, error) {
	if e.Variable {
		return nil, nil
	}
	ast, err := promql.ParseExpr(e.PromQL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Where, err)
	}
	var found []string
	parser.Inspect(ast, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !sluiceMetric(vs) {
			return nil
		}
		if e.Dashboard {
			for l, v := range map[string]string{"namespace": NamespaceVar, "job": JobVar} {
				if !hasMatcher(vs, l, v) {
					found = append(found, fmt.Sprintf("%s: %s does not filter on %s=~\"$%s\"", e.Where, vs, l, l))
				}
			}
			return nil
		}
		for _, a := range path {
			if why := drops(a); why != "" {
				found = append(found, fmt.Sprintf("%s: %s: %s", e.Where, vs, why))
			}
		}
		return nil
	})
	return found, nil
}

func sluiceMetric(vs *parser.VectorSelector) bool {
	name := vs.Name
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	return strings.HasPrefix(name, "sluice_") || strings.HasPrefix(name, "sluice:")
}

func hasMatcher(vs *parser.VectorSelector, label, value string) bool {
	return slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
		return m.Name == label && m.Type == labels.MatchRegexp && m.Value == value
	})
}

// drops says how the node n, above a selector, loses namespace or job,
// or is "" when it keeps both.
func drops(n parser.Node) string {
	switch n := n.(type) {
	case *parser.AggregateExpr:
		for _, l := range ScopeLabels {
			if n.Without == slices.Contains(n.Grouping, l) {
				return fmt.Sprintf("%s does not keep %s", aggDesc(n), l)
			}
		}
	case *parser.BinaryExpr:
		vm := n.VectorMatching
		if vm == nil || n.LHS.Type() != parser.ValueTypeVector || n.RHS.Type() != parser.ValueTypeVector {
			return ""
		}
		for _, l := range ScopeLabels {
			if vm.On != slices.Contains(vm.MatchingLabels, l) {
				return fmt.Sprintf("%s matches without %s", n.Op, l)
			}
		}
	case *parser.Call:
		switch n.Func.Name {
		case "absent", "absent_over_time", "scalar":
			return n.Func.Name + "() drops the labels"
		case "label_replace", "label_join":
			if s, ok := n.Args[1].(*parser.StringLiteral); ok && slices.Contains(ScopeLabels, s.Val) {
				return n.Func.Name + "() rewrites " + s.Val
			}
		}
	}
	return ""
}

func aggDesc(n *parser.AggregateExpr) string {
	kw := "by"
	if n.Without {
		kw = "without"
	}
	return fmt.Sprintf("%s %s (%s)", n.Op, kw, strings.Join(n.Grouping, ", "))
}
