// Command gen writes the files generated from deploy/prometheus's rule
// files (observability.Generated). Run by `go generate ./observability`
// in the deploy module, from deploy/observability.
//
// With -spec FILE, it writes the groups of the PrometheusRule object in
// FILE to standard output as a plain rule file instead, for `promtool
// check rules` (.ci/steps/alerts.sh).
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/deploy/observability"
)

func main() {
	spec := flag.String("spec", "", "print the rule groups of this PrometheusRule file")
	flag.Parse()
	if *spec != "" {
		raw, err := os.ReadFile(*spec)
		if err != nil {
			log.Fatal(err)
		}
		var obj monitoringv1.PrometheusRule
		if err := yaml.UnmarshalStrict(raw, &obj); err != nil {
			log.Fatalf("%s: %v", *spec, err)
		}
		out, err := yaml.Marshal(obj.Spec)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := os.Stdout.Write(out); err != nil {
			log.Fatal(err)
		}
		return
	}
	deploy := ".."
	files, err := observability.Generated(deploy)
	if err != nil {
		log.Fatal(err)
	}
	for path, content := range files {
		full := filepath.Join(deploy, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
