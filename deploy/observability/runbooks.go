package observability

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

// RunbookBase is where every alert's runbook_url points: docs/alerts.md
// on GitHub, then the anchor of the heading named after the alert.
const RunbookBase = "https://github.com/sluicehq/sluice/blob/main/docs/alerts.md#"

// Runbooks returns what is wrong between the alerts of the rule files and
// the runbooks of doc, the level-3 headings of its "## Alerts" section:
// an alert without annotations.runbook_url, or whose URL is not
// RunbookBase and its lowercased name, or whose heading is missing; a
// heading that names no alert.
func Runbooks(doc string, ruleFiles ...string) ([]string, error) {
	headings, err := alertHeadings(doc)
	if err != nil {
		return nil, err
	}
	var problems []string
	alerts := map[string]bool{}
	for _, path := range ruleFiles {
		groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				alerts[r.Alert] = true
				want := RunbookBase + strings.ToLower(r.Alert)
				switch got, ok := r.Annotations["runbook_url"]; {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: %s has no annotations.runbook_url", path, r.Alert))
				case got != want:
					problems = append(problems, fmt.Sprintf("%s: %s: runbook_url %s, want %s", path, r.Alert, got, want))
				}
				if !headings[r.Alert] {
					problems = append(problems, fmt.Sprintf("%s: no heading \"### %s\" under \"## Alerts\"", doc, r.Alert))
				}
			}
		}
	}
	for h := range headings {
		if !alerts[h] {
			problems = append(problems, fmt.Sprintf("%s: heading \"### %s\" names no alert", doc, h))
		}
	}
	return problems, nil
}

// alertHeadings reads the level-3 headings of the "## Alerts" section.
func alertHeadings(doc string) (map[string]bool, error) {
	f, err := os.Open(doc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	headings := map[string]bool{}
	in, fenced := false, false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		switch {
		case fenced:
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line[3:]) == "Alerts"
		case in && strings.HasPrefix(line, "### "):
			headings[strings.TrimSpace(line[4:])] = true
		}
	}
	return headings, s.Err()
}
