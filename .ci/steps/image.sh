#!/usr/bin/env bash
# CI: the container image, built as a release builds it and checked; CI
# builds, it publishes nothing. deploy/image builds it with no container
# engine (a Go program, go-containerregistry): linux/amd64 and linux/arm64,
# on no base image, run as 65532:65532, an OCI image layout in a tar file.
# Its test builds HEAD twice and checks:
#   - the two builds are the same bytes (the same index digest);
#   - the index holds exactly linux/amd64 and linux/arm64/v8 image manifests;
#   - each config: numeric non-root User, Entrypoint, ports, OCI labels
#     (revision = HEAD), created = every file time = the commit's time;
#   - each layer: /etc/passwd and /etc/group for 65532, /tmp 1777, the spool
#     directory owned by 65532, the binary;
#   - each binary: an ELF of its machine, static (no PT_INTERP, no dynamic
#     section), build info with its GOARCH, CGO_ENABLED=0, -trimpath,
#     default.pgo, vcs.revision = HEAD, the fallback TLS roots linked;
#   - the amd64 binary from the layer runs (`sluice help`);
#   - deploy/Dockerfile's final stage is the same image (FROM scratch, user,
#     entrypoint, ports, files).
# It prints the index digest, each platform's manifest and sizes.
# deploy/'s `go test ./...` runs the same test unless
# SLUICE_SKIP_IMAGE_BUILD=1: set that there to build the image once.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "== deploy/image: two builds of HEAD for linux/amd64 and linux/arm64, and their checks"
(cd deploy && SLUICE_SKIP_IMAGE_BUILD= go test -count=1 -v -run '^(TestImage|TestDockerfileMatchesTheImage|TestParsePlatform)$' ./image/)
