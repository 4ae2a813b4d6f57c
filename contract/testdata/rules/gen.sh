#!/usr/bin/env bash
# Builds rules.binpb, the descriptor set of rules.proto with its imports,
# for FuzzCompiledRules. Needs buf and third_party/proto (scripts/gen.sh
# prints it).
set -euo pipefail
cd "$(dirname "$0")"
root=../../..
export PATH="$(go env GOPATH)/bin:$PATH"
[ -d "$root/third_party/proto/buf/validate" ] || (cd "$root" && go run ./tools/protodeps -out third_party/proto)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/sluice/testrules/v1"
cp rules.proto "$tmp/src/sluice/testrules/v1/"
cp -r "$root/third_party/proto/." "$tmp/src/"
printf 'version: v2\n' >"$tmp/src/buf.yaml"
buf build "$tmp/src" --path "$tmp/src/sluice/testrules/v1/rules.proto" -o "$PWD/rules.binpb"
