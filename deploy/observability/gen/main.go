// Command gen writes the files generated from deploy/prometheus's rule
// files (observability.Generated). Run by `go generate ./observability`
// in the deploy module.
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/deploy/observability"
)

func main() {
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
