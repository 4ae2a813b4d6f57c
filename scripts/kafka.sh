#!/usr/bin/env bash
# scripts/kafka.sh — a single-node Apache Kafka (KRaft: one process is broker
# and controller) on loopback, for integration and fault tests. No docker and
# no apache.org download: the broker jars and their runtime dependencies come
# from Maven Central (scripts/kafka/pom.xml) into a cache that later runs reuse
# without calling Maven.
#
# Usage: scripts/kafka.sh COMMAND [--secure]
#   up      fetch the jars if not cached, format a fresh data dir if there is
#           none, start the broker, wait until it serves metadata, and print
#           SLUICE_KAFKA_BROKERS=127.0.0.1:PORT as the last line of stdout.
#           A no-op (same line) when it is already running.
#   start   same as up: starts the broker on the data it has (after stop).
#   stop    stop the broker (SIGTERM, bounded wait, then SIGKILL); keeps data.
#   kill    SIGKILL the broker at once (a crash); keeps data.
#   down    stop, then remove the run dir (data and logs) unless KEEP_DATA=1.
#   status  print whether it runs; exit 0 when running, 1 when not.
#   logs    print the last lines of the broker log (logs -f follows it).
#   topics NAME...  create these topics on the running broker unless they
#           exist, with SLUICE_KAFKA_PARTITIONS partitions (3) and one
#           replica (in secure mode over its SASL_SSL listener). sluice's
#           producer does not create the topics it publishes to.
#
# Environment:
#   SLUICE_KAFKA_VERSION          Kafka version from Maven Central (4.1.1)
#   SLUICE_KAFKA_PORT             PLAINTEXT listener on 127.0.0.1 (19092)
#   SLUICE_KAFKA_CONTROLLER_PORT  KRaft controller listener (SLUICE_KAFKA_PORT+1)
#   SLUICE_KAFKA_HEAP             JVM heap, -Xms and -Xmx (512m)
#   SLUICE_KAFKA_WAIT             seconds up waits for the broker (120)
#   SLUICE_KAFKA_STOP_WAIT        seconds stop waits after SIGTERM (30)
#   SLUICE_KAFKA_PROPS            extra server.properties lines, appended last
#   SLUICE_CACHE                  jar cache root ($HOME/.cache/sluice); jars in
#                                 $SLUICE_CACHE/kafka-VERSION/lib
#   SLUICE_RUN                    run dir: config, data, logs, pid
#                                 (/tmp/sluice-kafka)
#   KEEP_DATA=1                   down keeps the run dir
# Messages go to stderr; stdout carries only the SLUICE_KAFKA_BROKERS line.
#
# Secure mode (SLUICE_KAFKA_SECURE=1, or --secure after the command) is a
# second broker beside the plaintext one, with its own run dir and ports: a
# SASL_SSL listener for clients (SCRAM-SHA-512 and SCRAM-SHA-256), and
# PLAINTEXT listeners on loopback for the controller and the broker itself.
# The first up makes a throwaway CA and broker certificate (openssl) and a
# random password for the SCRAM user, kept in the run dir until down; no
# authorizer, so the user may create topics. up waits until the SASL_SSL
# listener answers with those credentials, and its last four lines of stdout
# are
#   SLUICE_KAFKA_SASL_SSL_BROKERS=127.0.0.1:PORT
#   SLUICE_KAFKA_CA=RUN/tls/ca.pem
#   SLUICE_KAFKA_SCRAM_USER=sluice
#   SLUICE_KAFKA_SCRAM_PASSWORD=...
# The other commands act on the secure broker likewise. Its environment:
#   SLUICE_KAFKA_SECURE_PORT      SASL_SSL listener on 127.0.0.1 (19192); the
#                                 controller is PORT+1, the broker's own
#                                 PLAINTEXT listener PORT+2
#   SLUICE_KAFKA_SECURE_RUN       run dir (/tmp/sluice-kafka-secure)
#   SLUICE_KAFKA_SCRAM_USER       the SCRAM user (sluice)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="${SLUICE_KAFKA_VERSION:-4.1.1}"
SECURE="${SLUICE_KAFKA_SECURE:-0}"
[[ "${2:-}" == --secure || "${3:-}" == --secure ]] && SECURE=1
if [[ "$SECURE" == 1 ]]; then
  PORT="${SLUICE_KAFKA_SECURE_PORT:-19192}"
  CONTROLLER_PORT="$((PORT + 1))"
  INTERNAL_PORT="$((PORT + 2))"
  SLUICE_RUN="${SLUICE_KAFKA_SECURE_RUN:-/tmp/sluice-kafka-secure}"
  SCRAM_USER="${SLUICE_KAFKA_SCRAM_USER:-sluice}"
else
  PORT="${SLUICE_KAFKA_PORT:-19092}"
  CONTROLLER_PORT="${SLUICE_KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
fi
HEAP="${SLUICE_KAFKA_HEAP:-512m}"
WAIT="${SLUICE_KAFKA_WAIT:-120}"
STOP_WAIT="${SLUICE_KAFKA_STOP_WAIT:-30}"
CACHE="${SLUICE_CACHE:-$HOME/.cache/sluice}/kafka-$VERSION"
LIB="$CACHE/lib"
RUN="${SLUICE_RUN:-/tmp/sluice-kafka}"
DATA="$RUN/data"
LOGS="$RUN/logs"
CONF="$RUN/server.properties"
PIDFILE="$RUN/kafka.pid"
POM="$SCRIPT_DIR/kafka/pom.xml"
LOG4J="$SCRIPT_DIR/kafka/log4j2.properties"
TOOLS_LOG4J="$SCRIPT_DIR/kafka/tools-log4j2.properties"
BROKERS="127.0.0.1:$PORT"
TLS_DIR="$RUN/tls"
CA="$TLS_DIR/ca.pem"
PASSWORD_FILE="$RUN/scram-password"
CLIENT_CONF="$RUN/client.properties"

log() { echo "kafka.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

case "$RUN" in / | "$HOME" | "$HOME"/ | /tmp | /tmp/) die "refusing SLUICE_RUN=$RUN (down deletes it)" ;; esac

# One command at a time per run dir (parallel test packages may all call up).
lock() {
  mkdir -p "$(dirname "$RUN")"
  exec 9>"$RUN.lock"
  flock -w 300 9 || die "another kafka.sh holds $RUN.lock"
}

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# The broker's pid when our broker (this run dir's config) is alive.
broker_pid() {
  local pid
  [[ -f "$PIDFILE" ]] || return 1
  pid="$(cat "$PIDFILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  grep -qF "$CONF" < <(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  echo "$pid"
}

java_cmd() {
  local java="java"
  [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null || die "java not found (Kafka 4.x needs Java 17+)"
  echo "$java"
}

# Fetch kafka_2.13 and its runtime jars into $LIB, once. The marker holds the
# pom's checksum, so editing the pom refetches; otherwise Maven is not called.
fetch_jars() {
  local sum
  sum="$(sha256sum "$POM" | cut -d' ' -f1)"
  if [[ -f "$CACHE/complete" && "$(cat "$CACHE/complete")" == "$sum" ]]; then
    return 0
  fi
  if ! command -v mvn >/dev/null; then
    log "installing maven"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q maven >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q maven >&2; }
  fi
  log "fetching Kafka $VERSION jars from Maven Central into $LIB"
  local tmp="$CACHE/lib.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  # (sed: Debian's mvn prints colour resets even with -q and -B.)
  mvn -B -q -f "$POM" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -Dkafka.version="$VERSION" -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' >&2 || {
    rm -rf "$tmp"
    rmdir "$CACHE" 2>/dev/null || true
    die "maven could not fetch Kafka $VERSION (is it on Maven Central?)"
  }
  ls "$tmp"/kafka_2.13-"$VERSION".jar >/dev/null || die "kafka_2.13-$VERSION.jar missing after fetch"
  rm -rf "$LIB" && mv "$tmp" "$LIB"
  echo "$sum" >"$CACHE/complete"
  log "cached $(find "$LIB" -name '*.jar' | wc -l) jars, $(du -sh "$LIB" | cut -f1)"
}

write_config() {
  local listeners
  if [[ "$SECURE" == 1 ]]; then
    listeners="listeners=SASL_SSL://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT,INTERNAL://127.0.0.1:$INTERNAL_PORT
advertised.listeners=SASL_SSL://127.0.0.1:$PORT,INTERNAL://127.0.0.1:$INTERNAL_PORT
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT
inter.broker.listener.name=INTERNAL
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/broker-keystore.pem
ssl.client.auth=none"
  else
    listeners="listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT"
  fi
  cat >"$CONF" <<EOF
# Written by scripts/kafka.sh; rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
$listeners
controller.listener.names=CONTROLLER
log.dirs=$DATA
num.partitions=3
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
  if [[ -n "${SLUICE_KAFKA_PROPS:-}" ]]; then
    printf '%s\n' "$SLUICE_KAFKA_PROPS" >>"$CONF"
  fi
}

# kafka-storage format, once per data dir, with a fresh cluster id.
format_storage() {
  [[ -f "$DATA/meta.properties" ]] && return 0
  local id
  # A Kafka Uuid: 16 random bytes, unpadded URL-safe base64. One that
  # starts with "-" would be read as an option by the format tool (as
  # Kafka's own Uuid.randomUuid knows), so draw again.
  id=-
  while [[ "$id" == -* ]]; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
  done
  local scram=()
  if [[ "$SECURE" == 1 ]]; then
    local pass
    pass="$(cat "$PASSWORD_FILE")"
    scram=(--add-scram "SCRAM-SHA-512=[name=$SCRAM_USER,password=$pass]"
      --add-scram "SCRAM-SHA-256=[name=$SCRAM_USER,password=$pass]")
  fi
  log "formatting $DATA (cluster id $id)"
  "$(java_cmd)" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" kafka.tools.StorageTool format -t "$id" -c "$CONF" "${scram[@]}" >&2 ||
    die "kafka.tools.StorageTool format failed"
}

# Secure mode: a CA and a broker certificate for 127.0.0.1 and localhost,
# and the SCRAM user's password, once per run dir (down removes them).
make_secrets() {
  if [[ ! -s "$PASSWORD_FILE" ]]; then
    [[ -f "$DATA/meta.properties" ]] && die "$DATA is formatted but $PASSWORD_FILE is gone (down, then up)"
    (umask 077 && head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$PASSWORD_FILE")
  fi
  [[ -s "$TLS_DIR/broker-keystore.pem" && -s "$CA" ]] && return 0
  if ! command -v openssl >/dev/null; then
    log "installing openssl"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl >&2; }
  fi
  log "making a throwaway CA and broker certificate in $TLS_DIR"
  mkdir -p "$TLS_DIR"
  (
    umask 077
    cd "$TLS_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 30 -subj "/CN=sluice test CA $(date +%s)" \
      -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=127.0.0.1" \
      -keyout broker-key.pem -out broker.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' >broker.ext
    openssl x509 -req -sha256 -days 30 -in broker.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
      -extfile broker.ext -out broker.pem 2>/dev/null
    # Kafka's PEM keystore: the PKCS#8 key, then the chain.
    openssl pkcs8 -topk8 -nocrypt -in broker-key.pem -out broker-key.p8
    cat broker-key.p8 broker.pem >broker-keystore.pem
    rm -f broker.csr broker.ext ca.srl
  ) || die "openssl could not make the certificates"
  chmod 644 "$CA"
}

# The admin tools' client settings for the SASL_SSL listener.
write_client_config() {
  (
    umask 077
    cat >"$CLIENT_CONF" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$SCRAM_USER" password="$(cat "$PASSWORD_FILE")";
ssl.truststore.type=PEM
ssl.truststore.location=$CA
EOF
  )
}

# print_brokers: the last lines of up's stdout.
print_brokers() {
  if [[ "$SECURE" == 1 ]]; then
    echo "SLUICE_KAFKA_SASL_SSL_BROKERS=$BROKERS"
    echo "SLUICE_KAFKA_CA=$CA"
    echo "SLUICE_KAFKA_SCRAM_USER=$SCRAM_USER"
    echo "SLUICE_KAFKA_SCRAM_PASSWORD=$(cat "$PASSWORD_FILE")"
  else
    echo "SLUICE_KAFKA_BROKERS=$BROKERS"
  fi
}

# started_since OFFSET: server.log has "Kafka Server started" past OFFSET.
started_since() {
  local size
  size="$(stat -c %s "$LOGS/server.log" 2>/dev/null || echo 0)"
  ((size < $1)) && set -- 0 # rolled over
  grep -q "Kafka Server started" < <(tail -c +"$(($1 + 1))" "$LOGS/server.log" 2>/dev/null)
}

print_tail() {
  local f
  for f in "$LOGS/server.log" "$LOGS/stdout.log"; do
    [[ -s "$f" ]] || continue
    echo "--- last 50 lines of $f" >&2
    tail -n 50 "$f" >&2
  done
}

cmd_up() {
  lock
  local pid
  if pid="$(broker_pid)"; then
    log "already running (pid $pid)"
    print_brokers
    return 0
  fi
  local ports=("$PORT" "$CONTROLLER_PORT")
  [[ "$SECURE" == 1 ]] && ports+=("$INTERNAL_PORT")
  for p in "${ports[@]}"; do
    port_open "$p" && die "port $p is taken by another process (set SLUICE_KAFKA_PORT, or SLUICE_KAFKA_SECURE_PORT)"
  done
  fetch_jars
  mkdir -p "$DATA" "$LOGS"
  local check_args=()
  if [[ "$SECURE" == 1 ]]; then
    make_secrets
    write_client_config
    check_args=(--command-config "$CLIENT_CONF")
  fi
  write_config
  format_storage

  local java start=$SECONDS log_from
  java="$(java_cmd)"
  # server.log survives stop/start: look for the start message past its end.
  log_from="$(stat -c %s "$LOGS/server.log" 2>/dev/null || echo 0)"
  log "starting Kafka $VERSION on $BROKERS (data in $DATA)"
  # setsid: the broker outlives the caller's shell and its Ctrl-C; 9>&-: it
  # must not inherit (and so hold forever) the lock. The inner shell writes
  # its own pid, then becomes the JVM.
  rm -f "$PIDFILE"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
    "$java" -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$LOG4J" \
    -Dkafka.logs.dir="$LOGS" -cp "$LIB/*" kafka.Kafka "$CONF" \
    >>"$LOGS/stdout.log" 2>&1 </dev/null 9>&- &
  local _
  for _ in {1..50}; do [[ -s "$PIDFILE" ]] && break; sleep 0.1; done
  pid="$(cat "$PIDFILE" 2>/dev/null)" || die "the broker did not start (no pid file)"

  # Ready = the listener accepts connections, the server logged that it
  # started, and a metadata + ApiVersions round trip answers.
  local deadline=$((SECONDS + WAIT))
  until port_open "$PORT" && started_since "$log_from"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      print_tail
      rm -f "$PIDFILE"
      die "broker exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      print_tail
      kill -s KILL "$pid" 2>/dev/null || true
      rm -f "$PIDFILE"
      die "broker did not start within ${WAIT}s (killed it; data kept in $DATA)"
    fi
    sleep 0.5
  done
  local left=$((deadline - SECONDS))
  ((left < 10)) && left=10
  if ! timeout "$left" "$java" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" \
    org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$BROKERS" "${check_args[@]}" >/dev/null 2>"$RUN/check.err"; then
    cat "$RUN/check.err" >&2
    print_tail
    kill -s KILL "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
    die "broker did not answer a metadata request (killed it; data kept in $DATA)"
  fi
  log "ready in $((SECONDS - start))s (pid $pid)"
  print_brokers
}

# stop_broker SIGNAL: signal the broker and wait for it to exit.
stop_broker() {
  local sig="$1" pid
  if ! pid="$(broker_pid)"; then
    rm -f "$PIDFILE"
    log "not running"
    return 0
  fi
  log "stopping pid $pid (SIG$sig)"
  kill -s "$sig" "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_WAIT))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      [[ "$sig" == KILL ]] && die "pid $pid survives SIGKILL"
      log "still running after ${STOP_WAIT}s; SIGKILL"
      kill -s KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 10))
      sig=KILL
    fi
    sleep 0.2
  done
  rm -f "$PIDFILE"
  log "stopped"
}

cmd_down() {
  lock
  stop_broker TERM
  if [[ "${KEEP_DATA:-0}" == 1 ]]; then
    log "KEEP_DATA=1: keeping $RUN"
  else
    rm -rf "$RUN"
    log "removed $RUN"
  fi
}

cmd_topics() {
  (($# > 0)) || die "topics: name the topics to create"
  broker_pid >/dev/null || die "topics: the broker is not running (up first)"
  local args=() t
  [[ "$SECURE" == 1 ]] && args=(--command-config "$CLIENT_CONF")
  for t in "$@"; do
    [[ "$t" == --secure ]] && continue
    timeout 60 "$(java_cmd)" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
      -Dlog4j2.configurationFile="$TOOLS_LOG4J" org.apache.kafka.tools.TopicCommand \
      --bootstrap-server "$BROKERS" "${args[@]}" --create --if-not-exists --topic "$t" \
      --partitions "${SLUICE_KAFKA_PARTITIONS:-3}" --replication-factor 1 >&2 ||
      die "topics: creating $t failed"
  done
  log "topics exist: $*"
}

cmd_status() {
  local pid
  if pid="$(broker_pid)"; then
    echo "kafka: running (pid $pid) on $BROKERS, data in $DATA"
  else
    echo "kafka: not running"
    return 1
  fi
}

cmd_logs() {
  [[ -f "$LOGS/server.log" ]] || die "no log at $LOGS/server.log"
  if [[ "${1:-}" == "-f" ]]; then
    exec tail -n 100 -F "$LOGS/server.log"
  fi
  tail -n "${LINES:-100}" "$LOGS/server.log"
}

case "${1:-}" in
  up | start) cmd_up ;;
  stop) lock && stop_broker TERM ;;
  kill) lock && stop_broker KILL ;;
  down) cmd_down ;;
  status) cmd_status ;;
  logs) cmd_logs "${2:-}" ;;
  topics) shift && cmd_topics "$@" ;;
  *)
    echo "usage: $0 up|start|stop|kill|down|status|logs [-f]|topics NAME... [--secure]" >&2
    exit 2
    ;;
esac
