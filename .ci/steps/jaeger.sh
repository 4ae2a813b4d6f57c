#!/usr/bin/env bash
# jaeger: builds Jaeger (v2, cmd/jaeger, the OpenTelemetry Collector based
# one) from the nested tool module tests/jaeger, for the tracing suite
# (tests/tracing), and prints the binary's path as the last line of stdout.
# Nothing is downloaded but Go modules from the module proxy. The binary is
# cached beside Kafka's jars (scripts/kafka.sh): a cached one is reused and
# nothing is built. A cold build takes about 5 minutes of one core and 85
# MB of disk; .ci/run starts it early, in the background, and waits for it
# before the tracing step.
# Run from the repository root.
#
# Environment:
#   SLUICE_CACHE  cache root ($HOME/.cache/sluice); the binary is
#                 $SLUICE_CACHE/jaeger-VERSION/jaeger
set -euo pipefail

# The version is tests/jaeger/go.mod's: change both together.
VERSION=v1.75.0
cache="${SLUICE_CACHE:-$HOME/.cache/sluice}/jaeger-$VERSION"
bin="$cache/jaeger"

if ! grep -q "github.com/jaegertracing/jaeger $VERSION\\b" tests/jaeger/go.mod; then
  echo "jaeger.sh: tests/jaeger/go.mod does not require jaeger $VERSION" >&2
  exit 1
fi

if [ -x "$bin" ]; then
  echo "jaeger $VERSION: cached" >&2
else
  mkdir -p "$cache"
  start=$(date +%s)
  echo "jaeger $VERSION: building (go build in tests/jaeger)" >&2
  # Built under another name and moved into place, so that a build cut
  # short leaves no binary that a later run would take as cached.
  (cd tests/jaeger && go build -trimpath -ldflags='-s -w' -o "$bin.tmp" \
    github.com/jaegertracing/jaeger/cmd/jaeger)
  mv "$bin.tmp" "$bin"
  echo "jaeger $VERSION: built in $(( $(date +%s) - start ))s" >&2
fi
echo "$bin"
