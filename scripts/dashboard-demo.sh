#!/usr/bin/env bash
# Draws deploy/grafana/dashboard.png with live data: `sluice dev` (gateway,
# in-process Kafka, demo poller) and a `sluice consumer` into SQLite, under
# a few minutes of gRPC and REST load (one event in fifty breaking its
# contract, and a burst over the source's rate), scraped every 5s by a
# Prometheus server from Debian's `prometheus` package with
# deploy/prometheus's rules; then scripts/dashboard-png.py queries each
# panel's expressions from it. Loopback only; every process it starts is
# stopped at exit.
#
#   bash scripts/dashboard-demo.sh [minutes of load, default 4]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
minutes=${1:-4}
command -v prometheus >/dev/null || { echo "needs prometheus: apt-get install prometheus" >&2; exit 1; }
python3 -c 'import matplotlib' 2>/dev/null || { echo "needs matplotlib: pip install matplotlib" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/sluice" ./cmd/sluice
http=127.0.0.1:28080 grpc=127.0.0.1:29090 dev_admin=127.0.0.1:29100 consumer_admin=127.0.0.1:29101 kafka=29092 prom=127.0.0.1:29099

"$work/sluice" dev --http "$http" --grpc "$grpc" --admin "$dev_admin" --kafka-port "$kafka" --tail=false >"$work/dev.log" 2>&1 &
pids+=($!)

# The consumer's admin listener with TLS, so the certificate row has data.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -days 45 -keyout "$work/admin.key" -out "$work/admin.crt" 2>/dev/null
cat >"$work/consumer.yaml" <<EOF
consumer: {group: dashboard-demo, lag_interval: 5s}
sink: {kind: sqlite, sqlite: {path: $work/events.db}}
contracts:
  descriptor_set: $root/examples/contracts.binpb
  types: [examples.shop.v1.OrderPlaced, examples.identity.v1.UserProfileUpdated, examples.logs.v1.LogLine]
kafka: {brokers: ["127.0.0.1:$kafka"]}
log: {level: warn}
admin: {addr: $consumer_admin, tls: {cert_file: $work/admin.crt, key_file: $work/admin.key}}
EOF

cat >"$work/prometheus.yml" <<EOF
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [$root/deploy/prometheus/recording.rules.yaml, $root/deploy/prometheus/alerts.rules.yaml]
scrape_configs:
  - job_name: sluice-gateway
    static_configs: [{targets: ["$dev_admin"]}]
  - job_name: sluice-consumer
    scheme: https
    tls_config: {ca_file: $work/admin.crt}
    static_configs: [{targets: ["$consumer_admin"]}]
EOF
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/tsdb" \
  --web.listen-address "$prom" >"$work/prometheus.log" 2>&1 &
pids+=($!)

for i in $(seq 1 60); do
  curl -fsS -o /dev/null "http://$dev_admin/metrics" 2>/dev/null && curl -fsS -o /dev/null "http://$prom/-/ready" 2>/dev/null && break
  [ "$i" = 60 ] && { echo "sluice dev or prometheus did not start:"; tail "$work/dev.log" "$work/prometheus.log"; exit 1; }
  sleep 1
done
"$work/sluice" consumer --config "$work/consumer.yaml" >"$work/consumer.log" 2>&1 &
pids+=($!)

seconds=$(python3 -c "print(int(float('$minutes') * 60))")
load=()
"$work/sluice" loadgen --target grpc --addr "$grpc" --rate 15 --events-per-request 100 --invalid-every 50 \
  --duration "${seconds}s" >"$work/grpc.log" 2>&1 &
load+=($!)
"$work/sluice" loadgen --target rest --encoding json --addr "$http" --rate 10 --events-per-request 10 --invalid-every 50 \
  --duration "${seconds}s" >"$work/rest.log" 2>&1 &
load+=($!)
# A burst over the demo source's rate (5000 events/s) in the middle.
sleep $((seconds / 2))
"$work/sluice" loadgen --target grpc --addr "$grpc" --concurrency 8 --events-per-request 500 --duration 20s \
  >"$work/burst.log" 2>&1 || true
# loadgen exits non-zero when events were refused, as the invalid ones are.
for pid in "${load[@]}"; do wait "$pid" || true; done
tail -n 3 "$work/grpc.log" "$work/rest.log" "$work/burst.log"
sleep 10 # one more scrape and rule evaluation
python3 scripts/dashboard-png.py --prometheus "http://$prom" --minutes "$minutes"
