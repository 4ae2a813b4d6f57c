// Command gen writes the table of the config structs' field comments
// (configdoc.Comments) as a Go file: go generate ./cmd/sluice runs it.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/sluicehq/sluice/internal/configdoc"
)

func main() {
	root := flag.String("root", ".", "the module's directory")
	out := flag.String("o", "config_comments.go", "the Go file to write")
	pkg := flag.String("pkg", "main", "its package")
	name := flag.String("var", "fieldComments", "its variable")
	flag.Parse()
	comments, err := configdoc.Comments(*root)
	if err != nil {
		log.Fatal(err)
	}
	src, err := configdoc.Source(*pkg, *name, comments)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
