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
#
# Cluster mode is three nodes on loopback from the same jars, each a
# combined broker and controller, the three of them the KRaft voters. Topics
# default to replication factor 3, min.insync.replicas=2 and unclean leader
# election off (the internal topics too), so that an acks=all write
# survives the loss of a node. Its commands act on nodes by id (1, 2, 3):
#   cluster up      fetch the jars if not cached, format each node's data dir
#                   (one cluster id) if it has none, start the nodes that are
#                   not running, wait until each serves metadata and all three
#                   are brokers of the cluster, and print
#                   SLUICE_KAFKA_BROKERS=127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#                   as the last line of stdout.
#   cluster down    stop every node (SIGTERM, at once, bounded wait, then
#                   SIGKILL), then remove the run dir unless KEEP_DATA=1.
#   cluster status  a line per node: running, paused or not running, with its
#                   pid, port and resident memory; exit 0 when all three run.
#   cluster topics NAME...  as topics, with replication factor 3.
#   cluster insync [SECONDS]  wait (60 s) until every partition of every
#                   topic has a leader and all its replicas in sync; exit 1
#                   naming the partitions that have not when time is up.
#   node start N    start node N on the data it has, wait until it serves.
#   node stop N     SIGTERM (an operator's stop; a paused node is resumed so
#                   that it can), bounded wait, then SIGKILL.
#   node kill N     SIGKILL (a crash).
#   node pause N    SIGSTOP (a zombie: a long GC pause, a partition).
#   node resume N   SIGCONT.
#   node restart N  node stop N, then node start N.
#   node logs N [-f]  the last lines of node N's server.log.
#   leader TOPIC PARTITION  print the node id that leads the partition, as
#                   the cluster's metadata says (kcat); exit 1 when it has
#                   none or the cluster does not know it.
#   controller      print the node id of the active controller, as the
#                   quorum says (DescribeQuorum); exit 1 when there is none
#                   or the quorum does not answer within 20 s.
# Its environment:
#   SLUICE_KAFKA_CLUSTER_PORT     node 1's PLAINTEXT listener (19301); node N
#                                 listens on PORT+N-1
#   SLUICE_KAFKA_CLUSTER_CONTROLLER_PORT  node 1's controller listener
#                                 (SLUICE_KAFKA_CLUSTER_PORT+10); node N's is
#                                 that +N-1
#   SLUICE_KAFKA_CLUSTER_RUN      run dir, a subdir nodeN per node
#                                 ($SLUICE_RUN-cluster, so /tmp/sluice-kafka-cluster)
#   SLUICE_KAFKA_HEAP             per node (384m: three nodes and the tests
#                                 fit a 2-core, 24 GiB machine)
#   SLUICE_KAFKA_VERSION, _WAIT, _STOP_WAIT, _PROPS, SLUICE_CACHE, KEEP_DATA
#                                 as above (_PROPS goes to every node)
# A follower that fetches nothing for replica.lag.time.max.ms (10 s here,
# Kafka's default 30 s) leaves the in-sync set; a node that misses
# broker.session.timeout.ms (9 s) of heartbeats is fenced.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="${SLUICE_KAFKA_VERSION:-4.1.1}"
SECURE="${SLUICE_KAFKA_SECURE:-0}"
[[ "${2:-}" == --secure || "${3:-}" == --secure ]] && SECURE=1
CLUSTER=0
case "${1:-}" in cluster | node | leader | controller) CLUSTER=1 SECURE=0 ;; esac
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
[[ "$CLUSTER" == 1 ]] && HEAP="${SLUICE_KAFKA_HEAP:-384m}"
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

LOCKFILE="$RUN.lock"
# The node the broker commands act on: the single broker is node 1, its
# own only voter, and its topics have one replica.
NODE_ID=1
VOTERS="1@127.0.0.1:$CONTROLLER_PORT"
REPLICAS=1
MIN_ISR=1
NODE_PROPS=""

# Cluster mode: node N's run dir, ports and config follow from N (node_env).
CLUSTER_PORT="${SLUICE_KAFKA_CLUSTER_PORT:-19301}"
CLUSTER_CONTROLLER_PORT="${SLUICE_KAFKA_CLUSTER_CONTROLLER_PORT:-$((CLUSTER_PORT + 10))}"
CLUSTER_RUN="${SLUICE_KAFKA_CLUSTER_RUN:-${SLUICE_RUN:-/tmp/sluice-kafka}-cluster}"
CLUSTER_ID_FILE="$CLUSTER_RUN/cluster-id"
NODES=(1 2 3)
if [[ "$CLUSTER" == 1 ]]; then
  LOCKFILE="$CLUSTER_RUN.lock"
  VOTERS=""
  BROKERS=""
  for n in "${NODES[@]}"; do
    VOTERS+="${VOTERS:+,}$n@127.0.0.1:$((CLUSTER_CONTROLLER_PORT + n - 1))"
    BROKERS+="${BROKERS:+,}127.0.0.1:$((CLUSTER_PORT + n - 1))"
  done
  CONTROLLERS="${VOTERS//[0-9]@/}"
  REPLICAS=3
  MIN_ISR=2
  # unclean.leader.election.enable is Kafka's default, said here because
  # the promise rests on it; a follower behind for 10 s (not 30) leaves the
  # in-sync set, so that a paused node holds acks=all writes up that long.
  NODE_PROPS="unclean.leader.election.enable=false
replica.lag.time.max.ms=10000
num.replica.fetchers=1"
fi

WHO=""           # "node N: " in cluster mode, before messages about a node
CLEANUP_PIDS="" # brokers this command started, which die kills
log() { echo "kafka.sh: $WHO$*" >&2; }
die() {
  log "error: $*"
  # shellcheck disable=SC2086 # a list of pids
  [[ -z "$CLEANUP_PIDS" ]] || kill -s KILL $CLEANUP_PIDS 2>/dev/null || true
  exit 1
}

case "$RUN" in / | "$HOME" | "$HOME"/ | /tmp | /tmp/) die "refusing SLUICE_RUN=$RUN (down deletes it)" ;; esac
case "$CLUSTER_RUN" in / | "$HOME" | "$HOME"/ | /tmp | /tmp/) die "refusing SLUICE_KAFKA_CLUSTER_RUN=$CLUSTER_RUN (cluster down deletes it)" ;; esac

# One command at a time per run dir (parallel test packages may all call up).
lock() {
  mkdir -p "$(dirname "$LOCKFILE")"
  exec 9>"$LOCKFILE"
  flock -w 300 9 || die "another kafka.sh holds $LOCKFILE"
}

# node_env N: the broker commands act on cluster node N from here on.
node_env() {
  [[ "$1" =~ ^[123]$ ]] || die "no node ${1:-(none given)}: the nodes are 1, 2 and 3"
  NODE_ID="$1"
  WHO="node $NODE_ID: "
  PORT="$((CLUSTER_PORT + NODE_ID - 1))"
  CONTROLLER_PORT="$((CLUSTER_CONTROLLER_PORT + NODE_ID - 1))"
  RUN="$CLUSTER_RUN/node$NODE_ID"
  DATA="$RUN/data"
  LOGS="$RUN/logs"
  CONF="$RUN/server.properties"
  PIDFILE="$RUN/kafka.pid"
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
node.id=$NODE_ID
controller.quorum.voters=$VOTERS
$listeners
controller.listener.names=CONTROLLER
log.dirs=$DATA
num.partitions=3
default.replication.factor=$REPLICAS
min.insync.replicas=$MIN_ISR
auto.create.topics.enable=true
offsets.topic.replication.factor=$REPLICAS
transaction.state.log.replication.factor=$REPLICAS
transaction.state.log.min.isr=$MIN_ISR
share.coordinator.state.topic.replication.factor=$REPLICAS
share.coordinator.state.topic.min.isr=$MIN_ISR
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
  if [[ -n "$NODE_PROPS" ]]; then
    printf '%s\n' "$NODE_PROPS" >>"$CONF"
  fi
  if [[ -n "${SLUICE_KAFKA_PROPS:-}" ]]; then
    printf '%s\n' "$SLUICE_KAFKA_PROPS" >>"$CONF"
  fi
}

# A Kafka Uuid: 16 random bytes, unpadded URL-safe base64. One that starts
# with "-" would be read as an option by the format tool (as Kafka's own
# Uuid.randomUuid knows), so draw again.
new_cluster_id() {
  local id=-
  while [[ "$id" == -* ]]; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
  done
  echo "$id"
}

# kafka-storage format, once per data dir, with a fresh cluster id (in
# cluster mode, the cluster's: every node of a cluster has the same).
format_storage() {
  [[ -f "$DATA/meta.properties" ]] && return 0
  local id
  if [[ "$CLUSTER" == 1 ]]; then
    id="$(cat "$CLUSTER_ID_FILE" 2>/dev/null)" || die "no cluster id in $CLUSTER_ID_FILE (cluster down, then cluster up)"
  else
    id="$(new_cluster_id)"
  fi
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

  local start=$SECONDS deadline
  launch
  pid="$LAUNCHED_PID"
  deadline=$((SECONDS + WAIT))
  wait_started "$pid" "$LOG_FROM" "$deadline"
  check_metadata "$pid" "$deadline" "${check_args[@]}"
  log "ready in $((SECONDS - start))s (pid $pid)"
  print_brokers
}

# launch: start the broker of the run dir (write_config first) in the
# background; sets LAUNCHED_PID, and LOG_FROM, the size server.log had:
# server.log survives stop/start, so the start message is looked for past
# it.
launch() {
  local java
  java="$(java_cmd)"
  LOG_FROM="$(stat -c %s "$LOGS/server.log" 2>/dev/null || echo 0)"
  log "starting Kafka $VERSION on 127.0.0.1:$PORT (data in $DATA)"
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
  LAUNCHED_PID="$(cat "$PIDFILE" 2>/dev/null)" || die "the broker did not start (no pid file)"
}

# wait_started PID LOG_FROM DEADLINE: wait until the broker's listener
# accepts connections and its server.log says it started; a broker that
# exits, or is not up by DEADLINE (in $SECONDS), is killed and stops the
# script.
wait_started() {
  local pid="$1" log_from="$2" deadline="$3"
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
}

# check_metadata PIDS DEADLINE [ARGS...]: a metadata + ApiVersions round
# trip through $BROKERS answers, and in cluster mode names the nodes
# CHECK_NODES (every node unless set) as brokers; else the brokers PIDS (a
# list) are killed and the script stops.
check_metadata() {
  local pid="$1" deadline="$2"
  shift 2
  local left=$((deadline - SECONDS))
  ((left < 10)) && left=10
  if timeout "$left" "$(java_cmd)" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" \
    org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$BROKERS" "$@" >"$RUN/check.out" 2>"$RUN/check.err"; then
    [[ "$CLUSTER" == 1 ]] || return 0
    local n missing=""
    for n in ${CHECK_NODES:-${NODES[*]}}; do
      grep -q "(id: $n " "$RUN/check.out" || missing+=" $n"
    done
    [[ -z "$missing" ]] && return 0
    log "the cluster's metadata lacks node(s)$missing"
  fi
  cat "$RUN/check.err" >&2
  print_tail
  # shellcheck disable=SC2086 # a list of pids
  kill -s KILL $pid 2>/dev/null || true
  rm -f "$PIDFILE"
  die "broker did not answer a metadata request (killed it; data kept in $DATA)"
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
  # A paused broker acts on SIGTERM only once it runs again.
  [[ "$sig" == KILL ]] || kill -s CONT "$pid" 2>/dev/null || true
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
  if [[ "$CLUSTER" == 1 ]]; then
    any_node_running || die "topics: no node of the cluster is running (cluster up first)"
  else
    broker_pid >/dev/null || die "topics: the broker is not running (up first)"
  fi
  local args=() t
  [[ "$SECURE" == 1 ]] && args=(--command-config "$CLIENT_CONF")
  for t in "$@"; do
    [[ "$t" == --secure ]] && continue
    timeout 60 "$(java_cmd)" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
      -Dlog4j2.configurationFile="$TOOLS_LOG4J" org.apache.kafka.tools.TopicCommand \
      --bootstrap-server "$BROKERS" "${args[@]}" --create --if-not-exists --topic "$t" \
      --partitions "${SLUICE_KAFKA_PARTITIONS:-3}" --replication-factor "$REPLICAS" >&2 ||
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

# --- cluster mode -----------------------------------------------------

# node_state: sets NODE_STATE to running, paused or stopped for the node
# of node_env, and NODE_PID to its pid ("" when stopped).
node_state() {
  NODE_STATE=stopped NODE_PID=""
  local pid state
  pid="$(broker_pid)" || return 0
  NODE_PID="$pid"
  # The field after the command's name in /proc/PID/stat; T: stopped by a
  # signal.
  state="$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  if [[ "$state" == T ]]; then NODE_STATE=paused; else NODE_STATE=running; fi
}

any_node_running() {
  local n
  for n in "${NODES[@]}"; do
    node_env "$n"
    node_state
    WHO=""
    [[ "$NODE_STATE" == running ]] && return 0
  done
  return 1
}

# prepare_node: what node_env's node needs before launch: free ports, a
# config, a formatted data dir.
prepare_node() {
  local p
  for p in "$PORT" "$CONTROLLER_PORT"; do
    port_open "$p" && die "port $p is taken by another process (set SLUICE_KAFKA_CLUSTER_PORT)"
  done
  mkdir -p "$DATA" "$LOGS"
  write_config
  format_storage
}

cmd_cluster_up() {
  lock
  local start=$SECONDS n pids=() froms=() any=0
  mkdir -p "$CLUSTER_RUN"
  fetch_jars
  [[ -s "$CLUSTER_ID_FILE" ]] || new_cluster_id >"$CLUSTER_ID_FILE"
  # Every node that is not running starts at once: a node's broker waits
  # for a quorum of controllers, two of the three. If one fails, die kills
  # those started here (CLEANUP_PIDS).
  for n in "${NODES[@]}"; do
    node_env "$n"
    node_state
    case "$NODE_STATE" in
      running) pids[n]="" ;;
      paused) die "paused (node resume $n)" ;;
      stopped)
        prepare_node
        launch
        pids[n]="$LAUNCHED_PID" froms[n]="$LOG_FROM" any=1
        CLEANUP_PIDS+=" $LAUNCHED_PID"
        ;;
    esac
  done
  if [[ "$any" == 0 ]]; then
    log "already running"
    print_brokers
    return 0
  fi
  local deadline=$((SECONDS + WAIT))
  for n in "${NODES[@]}"; do
    [[ -n "${pids[n]}" ]] || continue
    node_env "$n"
    wait_started "${pids[n]}" "${froms[n]}" "$deadline"
  done
  check_metadata "$CLEANUP_PIDS" "$deadline"
  CLEANUP_PIDS=""
  local running=""
  for n in "${NODES[@]}"; do
    node_env "$n"
    node_state
    running+=" $n:$NODE_PID"
  done
  WHO=""
  log "cluster ready in $((SECONDS - start))s (node:pid$running)"
  print_brokers
}

cmd_cluster_down() {
  lock
  local n
  # At once: a node stopping alone waits for the others' controllers to
  # move its leaders away; all together, each stops within STOP_WAIT.
  for n in "${NODES[@]}"; do
    (node_env "$n" && stop_broker TERM) &
  done
  wait
  if [[ "${KEEP_DATA:-0}" == 1 ]]; then
    log "KEEP_DATA=1: keeping $CLUSTER_RUN"
  else
    rm -rf "$CLUSTER_RUN"
    log "removed $CLUSTER_RUN"
  fi
}

cmd_cluster_status() {
  local n rss all=0
  for n in "${NODES[@]}"; do
    node_env "$n"
    node_state
    if [[ "$NODE_STATE" == stopped ]]; then
      echo "node $n: not running (127.0.0.1:$PORT)"
      all=1
      continue
    fi
    rss="$(awk '/^VmRSS:/ {printf "%d MiB", $2 / 1024}' "/proc/$NODE_PID/status" 2>/dev/null || true)"
    echo "node $n: $NODE_STATE (pid $NODE_PID) on 127.0.0.1:$PORT, controller 127.0.0.1:$CONTROLLER_PORT, rss ${rss:-?}, data in $DATA"
    [[ "$NODE_STATE" == running ]] || all=1
  done
  return "$all"
}

# cmd_cluster_insync [SECONDS]: wait until every partition the cluster
# has (kcat -L) has a leader and as many replicas in sync as it has.
cmd_cluster_insync() {
  local wait="${1:-60}" deadline behind
  [[ "$wait" =~ ^[0-9]+$ ]] || die "cluster insync: SECONDS, not $wait"
  need_kcat
  deadline=$((SECONDS + wait))
  while :; do
    # kcat's lines: topic "T" with N partitions:
    #               partition P, leader L, replicas: A,B,C, isrs: A,B[, Broker: error]
    behind="$(kcat -L -b "$BROKERS" -m 10 2>/dev/null | awk '
      $1 == "topic" { topic = $2; gsub(/"/, "", topic) }
      $1 == "partition" {
        p = $2; sub(/,$/, "", p); leader = $4; sub(/,$/, "", leader)
        r = $6; sub(/,$/, "", r); i = $8; sub(/,$/, "", i)
        if (leader == "-1" || split(r, a, ",") != split(i, b, ",")) printf "%s/%s ", topic, p
      }
      END { if (NR == 0) print "no-metadata" }')" || behind="no-metadata"
    [[ -z "$behind" ]] && { log "every partition is in sync"; return 0; }
    if ((SECONDS >= deadline)); then
      log "not in sync after ${wait}s: $behind"
      return 1
    fi
    sleep 1
  done
}

need_kcat() {
  command -v kcat >/dev/null || die "kcat not found (apt-get install kcat)"
}

cmd_node() {
  local what="${1:-}" n="${2:-}"
  node_env "$n"
  case "$what" in
    logs)
      cmd_logs "${3:-}"
      return
      ;;
    start | stop | kill | pause | resume | restart) ;;
    *) usage ;;
  esac
  lock
  node_state
  case "$what" in
    start) node_start "$NODE_STATE" ;;
    stop) stop_broker TERM ;;
    kill) stop_broker KILL ;;
    restart)
      stop_broker TERM
      node_start stopped
      ;;
    pause)
      [[ "$NODE_STATE" == running ]] || die "cannot pause: $NODE_STATE"
      kill -s STOP "$NODE_PID"
      log "paused (pid $NODE_PID, SIGSTOP)"
      ;;
    resume)
      [[ "$NODE_STATE" == paused ]] || die "cannot resume: $NODE_STATE"
      kill -s CONT "$NODE_PID"
      log "resumed (pid $NODE_PID, SIGCONT)"
      ;;
  esac
}

# node_start STATE: start node_env's node unless it runs, and wait until
# it serves and the cluster's metadata names every node.
node_start() {
  case "$1" in
    running) log "already running (pid $NODE_PID)" && return 0 ;;
    paused) die "paused (node resume $NODE_ID)" ;;
  esac
  [[ -s "$CLUSTER_ID_FILE" ]] || die "node start: the cluster was never up (cluster up first)"
  fetch_jars
  prepare_node
  local start=$SECONDS deadline pid
  launch
  pid="$LAUNCHED_PID"
  deadline=$((SECONDS + WAIT))
  wait_started "$pid" "$LOG_FROM" "$deadline"
  # Only this node: the others may be down on purpose.
  CHECK_NODES="$NODE_ID" check_metadata "$pid" "$deadline"
  log "ready in $((SECONDS - start))s (pid $pid)"
}

cmd_leader() {
  local topic="${1:-}" partition="${2:-}" leader
  [[ -n "$topic" && "$partition" =~ ^[0-9]+$ ]] || die "leader: give TOPIC PARTITION"
  need_kcat
  leader="$(kcat -L -b "$BROKERS" -t "$topic" -m 10 2>/dev/null | awk -v p="$partition," '
    $1 == "partition" && $2 == p { l = $4; sub(/,$/, "", l); print l; exit }')" || true
  [[ -n "$leader" ]] || die "leader: the cluster has no partition $partition of $topic"
  [[ "$leader" == -1 ]] && die "leader: $topic/$partition has no leader"
  echo "$leader"
}

cmd_controller() {
  local out leader
  mkdir -p "$CLUSTER_RUN"
  # Without a quorum (two nodes down) the tool would wait a minute.
  out="$(timeout 20 "$(java_cmd)" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB/*" \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" org.apache.kafka.tools.MetadataQuorumCommand \
    --bootstrap-controller "$CONTROLLERS" describe --status 2>"$CLUSTER_RUN/controller.err")" ||
    { tail -n 5 "$CLUSTER_RUN/controller.err" >&2; die "controller: the quorum did not answer within 20s"; }
  leader="$(awk '$1 == "LeaderId:" { print $2 }' <<<"$out")"
  [[ "$leader" =~ ^[0-9]+$ ]] || die "controller: the quorum has no leader (LeaderId ${leader:-missing})"
  echo "$leader"
}

usage() {
  cat >&2 <<EOF
usage: $0 up|start|stop|kill|down|status|logs [-f]|topics NAME... [--secure]
       $0 cluster up|down|status|topics NAME...|insync [SECONDS]
       $0 node start|stop|kill|pause|resume|restart|logs N
       $0 leader TOPIC PARTITION
       $0 controller
EOF
  exit 2
}

case "${1:-}" in
  up | start) cmd_up ;;
  stop) lock && stop_broker TERM ;;
  kill) lock && stop_broker KILL ;;
  down) cmd_down ;;
  status) cmd_status ;;
  logs) cmd_logs "${2:-}" ;;
  topics) shift && cmd_topics "$@" ;;
  cluster)
    case "${2:-}" in
      up) cmd_cluster_up ;;
      down) cmd_cluster_down ;;
      status) cmd_cluster_status ;;
      topics) shift 2 && cmd_topics "$@" ;;
      insync) cmd_cluster_insync "${3:-}" ;;
      *) usage ;;
    esac
    ;;
  node) shift && cmd_node "$@" ;;
  leader) shift && cmd_leader "$@" ;;
  controller) cmd_controller ;;
  *) usage ;;
esac
