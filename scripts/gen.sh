#!/usr/bin/env bash
# Regenerates gen/ and the example contracts image from proto/.
# Needs no schema registry: the imported protos are printed from Go
# descriptors (tools/protodeps) and every plugin runs locally. The tools are
# installed from the Go module proxy at pinned versions when missing.
# The REST API's OpenAPI description is not generated here: the gateway
# builds it from the contracts it loads and serves it at /openapi.json.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$(go env GOPATH)/bin:$PATH"
need() { # need BINARY MODULE@VERSION
  command -v "$1" >/dev/null 2>&1 || { echo "installing $2" >&2; go install "$2"; }
}
need buf github.com/bufbuild/buf/cmd/buf@v1.75.0
need protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
need protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
need protoc-gen-grpc-gateway github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@v2.33.0

rm -rf third_party/proto
go run ./tools/protodeps -out third_party/proto
buf format -w proto
buf lint
buf generate
# The example contracts as a buf image: what `sluice dev` embeds and what a
# deployment names in contracts.descriptor_set.
buf build --path proto/examples -o examples/contracts.binpb
# The contract that uses every standard rule, for contract's FuzzCompiledRules.
bash contract/testdata/rules/gen.sh
echo "gen: ok" >&2
