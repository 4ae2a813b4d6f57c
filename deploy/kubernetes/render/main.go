// Command render prints what `kubectl kustomize DIR` prints, with the
// kustomize library the deploy module's tests use, for machines without
// kubectl (.ci/steps/kube.sh):
//
//	cd deploy && go run ./kubernetes/render kubernetes/overlays/example
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: render DIR")
		os.Exit(2)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	y, err := m.AsYaml()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	os.Stdout.Write(y)
}
