// Command protodeps prints the .proto sources of the files sluice's API
// imports (protovalidate's rules, google.api's HTTP annotations) from the
// descriptors compiled into their Go packages, so code generation needs no
// schema registry. buf.yaml lists the output folder as a second module that
// is left out of lint.
//
//	go run ./tools/protodeps -out proto/third_party
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/jhump/protoreflect/desc"
	"github.com/jhump/protoreflect/desc/protoprint"
	_ "google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// roots are the files sluice's protos import; their non-well-known
// dependencies are printed too.
var roots = []string{
	"buf/validate/validate.proto",
	"google/api/annotations.proto",
}

func main() {
	out := flag.String("out", "proto/third_party", "folder to write the .proto files into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "protodeps:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	seen := map[string]bool{}
	var files []protoreflect.FileDescriptor
	var walk func(path string) error
	walk = func(path string) error {
		if seen[path] || strings.HasPrefix(path, "google/protobuf/") {
			return nil // buf ships the well-known types itself
		}
		seen[path] = true
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		files = append(files, fd)
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			if err := walk(imports.Get(i).Path()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return err
		}
	}
	printer := &protoprint.Printer{}
	for _, fd := range files {
		wrapped, err := desc.WrapFile(fd)
		if err != nil {
			return fmt.Errorf("%s: %w", fd.Path(), err)
		}
		var b strings.Builder
		if err := printer.PrintProtoFile(wrapped, &b); err != nil {
			return fmt.Errorf("%s: %w", fd.Path(), err)
		}
		dst := filepath.Join(out, filepath.FromSlash(fd.Path()))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
