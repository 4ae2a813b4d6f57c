// Command image builds sluice's container image without a container
// engine, and writes it as an OCI image layout in a tar file.
//
//	cd deploy && go run ./image -o /tmp/sluice-image.tar
//
// For each platform (linux/amd64 and linux/arm64 by default) it
// cross-compiles ../cmd/sluice as a static binary (CGO_ENABLED=0,
// -trimpath, the committed default.pgo by -pgo=auto, the VCS stamp kept)
// and makes an image of one layer on no base at all: the binary at
// /usr/local/bin/sluice, /etc/passwd and /etc/group naming uid and gid
// 65532 "nonroot", its home, /tmp (1777) and the spool's directory
// /var/lib/sluice/spool owned by that user. The binary needs nothing else:
// it is static and carries its TLS roots (cmd/sluice/roots.go). The images
// run as 65532:65532 and are gathered in one multi-arch OCI image index.
//
// The output is reproducible: every time in it (file times, the config's
// created, the org.opencontainers.image.created label) is the commit's
// time from the binary's build info, and nothing else varies, so two
// builds of one clean commit with one Go toolchain give the same index
// digest. A tree with uncommitted changes still builds, with a warning:
// its image is not the commit's.
//
// The tar file is an OCI image layout ("oci-archive"): podman load -i,
// skopeo copy --all oci-archive:FILE docker://REGISTRY/..., or unpacked
// into a directory for crane push DIR REF. It publishes nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

func main() {
	var (
		out       = flag.String("o", "", "write the image's OCI layout `tar` here (required)")
		platforms = flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated `os/arch` list")
		src       = flag.String("src", "", "the sluice checkout to build (`dir`; default: the git top-level of the working directory)")
		name      = flag.String("name", "ghcr.io/sluicehq/sluice", "the `repository` named in the layout's index.json (with the version as tag)")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./image -o FILE.tar [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	opts := Options{Src: *src, Name: *name, Log: os.Stderr}
	for _, p := range strings.Split(*platforms, ",") {
		pl, err := parsePlatform(strings.TrimSpace(p))
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(2)
		}
		opts.Platforms = append(opts.Platforms, pl)
	}
	res, err := Build(ctx, opts, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	res.Print(os.Stdout)
}
