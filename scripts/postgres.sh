#!/usr/bin/env bash
# scripts/postgres.sh — a PostgreSQL server on loopback for the sink tests,
# from Debian's packages (installed when missing), run as a Debian cluster
# (pg_createcluster / pg_ctlcluster). Needs root.
#
# Usage: scripts/postgres.sh COMMAND
#   up      install PostgreSQL if missing, create the cluster if missing,
#           listen on 127.0.0.1:PORT only, start it, create the role sluice
#           (password sluice) and the database sluice_test it owns, wait until
#           it accepts connections, and print
#           SLUICE_POSTGRES_DSN=postgres://sluice:sluice@127.0.0.1:PORT/sluice_test?sslmode=disable
#           as the last line of stdout. Idempotent; quick when running.
#   start   same as up (the data is kept across stop/start).
#   stop    stop the server (fast shutdown); keeps the data.
#   kill    stop it the way a crash would (immediate shutdown: no checkpoint,
#           recovery on next start); keeps the data.
#   down    stop the server (same as stop; the cluster and data stay).
#   reset   drop and recreate the database sluice_test (server must run).
#   status  print whether it runs; exit 0 when running, 1 when not.
#
# Environment:
#   SLUICE_PG_PORT     port on 127.0.0.1 (5432)
#   SLUICE_PG_CLUSTER  Debian cluster name (main)
#   SLUICE_PG_VERSION  major version (the newest installed)
#   SLUICE_PG_WAIT     seconds to wait for the server (60)
# Messages go to stderr; stdout carries only the SLUICE_POSTGRES_DSN line.
set -euo pipefail

PORT="${SLUICE_PG_PORT:-5432}"
CLUSTER="${SLUICE_PG_CLUSTER:-main}"
WAIT="${SLUICE_PG_WAIT:-60}"
ROLE=sluice
PASSWORD=sluice
DB=sluice_test
DSN="postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB?sslmode=disable"

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$(id -u)" == 0 ]] || die "run as root (it installs packages and runs pg_ctlcluster)"
cd / # runuser -u postgres must not start in a directory it cannot read

# One command at a time (parallel test packages may all call up).
exec 9>/tmp/sluice-postgres.lock
flock -w 600 9 || die "another postgres.sh holds /tmp/sluice-postgres.lock"

# The newest installed server major version, or nothing.
installed_version() {
  local d v=""
  for d in /usr/lib/postgresql/*/bin/postgres; do
    [[ -x "$d" ]] || continue
    d="${d#/usr/lib/postgresql/}"
    d="${d%%/*}"
    if [[ -z "$v" ]] || ((d > v)); then v="$d"; fi
  done
  echo "$v"
}

ensure_installed() {
  VERSION="${SLUICE_PG_VERSION:-$(installed_version)}"
  if [[ -n "$VERSION" && -x "/usr/lib/postgresql/$VERSION/bin/postgres" ]]; then
    return 0
  fi
  log "installing PostgreSQL from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2 || die "apt-get update failed"
  local pkg=postgresql
  [[ -n "${SLUICE_PG_VERSION:-}" ]] && pkg="postgresql-$SLUICE_PG_VERSION"
  # 9>&-: the package's postinst may start a server; it must not hold the lock.
  apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "$pkg" >&2 9>&- || die "apt-get install $pkg failed"
  VERSION="${SLUICE_PG_VERSION:-$(installed_version)}"
  [[ -n "$VERSION" ]] || die "no PostgreSQL server found after installing $pkg"
}

cluster_exists() { [[ -f "/etc/postgresql/$VERSION/$CLUSTER/postgresql.conf" ]]; }

# The cluster's status word from pg_lsclusters: online, down, ...
cluster_status() {
  pg_lsclusters -h "$VERSION" "$CLUSTER" 2>/dev/null | awk '{print $4}'
}

running() { [[ "$(cluster_status)" == online* ]]; }

ready() { pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2 2>/dev/null; }

wait_ready() {
  local deadline=$((SECONDS + WAIT))
  until ready; do
    if ((SECONDS >= deadline)); then
      tail -n 50 "/var/log/postgresql/postgresql-$VERSION-$CLUSTER.log" >&2 2>/dev/null || true
      die "PostgreSQL did not accept connections on 127.0.0.1:$PORT within ${WAIT}s"
    fi
    sleep 0.5
  done
}

configure() {
  if ! cluster_exists; then
    log "creating cluster $VERSION/$CLUSTER on port $PORT"
    pg_createcluster -p "$PORT" "$VERSION" "$CLUSTER" >&2 ||
      die "pg_createcluster $VERSION $CLUSTER failed"
  fi
  # Checked every time, so a changed SLUICE_PG_PORT takes effect. Edited
  # with sed: pg_conftool writes listen_addresses unquoted (a syntax error).
  local conf="/etc/postgresql/$VERSION/$CLUSTER/postgresql.conf"
  local want_port="port = $PORT" want_listen="listen_addresses = '127.0.0.1'"
  if ! grep -qx "$want_port" "$conf" || ! grep -qx "$want_listen" "$conf"; then
    if running; then
      log "stopping $VERSION/$CLUSTER to make it listen on 127.0.0.1:$PORT"
      pg_ctlcluster "$VERSION" "$CLUSTER" stop -m fast >&2
    fi
    sed -i -E -e '/^[#[:space:]]*port[[:space:]]*=/d' \
      -e '/^[#[:space:]]*listen_addresses[[:space:]]*=/d' "$conf"
    printf '%s\n' "# scripts/postgres.sh" "$want_listen" "$want_port" >>"$conf"
  fi
}

# As the postgres superuser over the local socket (peer auth).
psql_admin() {
  runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PORT" -d postgres "$@"
}

ensure_role_and_db() {
  psql_admin >&2 <<SQL || die "could not create role $ROLE / database $DB"
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$ROLE') THEN
    CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD';
  END IF;
END
\$\$;
SQL
  if [[ "$(psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
    log "creating database $DB owned by $ROLE"
    psql_admin -c "CREATE DATABASE $DB OWNER $ROLE" >&2
  fi
}

cmd_up() {
  ensure_installed
  configure
  if ! running; then
    log "starting PostgreSQL $VERSION/$CLUSTER on 127.0.0.1:$PORT"
    # 9>&-: the server must not inherit (and so hold forever) the lock.
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2 9>&- || {
      tail -n 50 "/var/log/postgresql/postgresql-$VERSION-$CLUSTER.log" >&2 2>/dev/null || true
      die "pg_ctlcluster $VERSION $CLUSTER start failed"
    }
  fi
  wait_ready
  # The DSN working as is (role, password, database) saves the admin steps.
  if ! PGPASSWORD="$PASSWORD" PGCONNECT_TIMEOUT=5 psql -X -q -tA -h 127.0.0.1 -p "$PORT" \
    -U "$ROLE" -d "$DB" -c 'SELECT 1' >/dev/null 2>&1; then
    ensure_role_and_db
  fi
  echo "SLUICE_POSTGRES_DSN=$DSN"
}

cmd_stop() { # cmd_stop fast|immediate
  VERSION="${SLUICE_PG_VERSION:-$(installed_version)}"
  if [[ -z "$VERSION" ]] || ! cluster_exists || ! running; then
    log "not running"
    return 0
  fi
  log "stopping $VERSION/$CLUSTER ($1)"
  pg_ctlcluster "$VERSION" "$CLUSTER" stop -m "$1" -- -t "$WAIT" >&2 ||
    die "pg_ctlcluster $VERSION $CLUSTER stop failed"
  log "stopped"
}

cmd_reset() {
  VERSION="${SLUICE_PG_VERSION:-$(installed_version)}"
  if [[ -z "$VERSION" ]] || ! running; then die "not running"; fi
  log "recreating database $DB"
  psql_admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >&2
  ensure_role_and_db
}

cmd_status() {
  VERSION="${SLUICE_PG_VERSION:-$(installed_version)}"
  if [[ -n "$VERSION" ]] && cluster_exists && running && ready; then
    echo "postgres: running ($VERSION/$CLUSTER) on 127.0.0.1:$PORT"
  else
    echo "postgres: not running"
    return 1
  fi
}

case "${1:-}" in
  up | start) cmd_up ;;
  stop | down) cmd_stop fast ;;
  kill) cmd_stop immediate ;;
  reset) cmd_reset ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 up|start|stop|kill|down|reset|status" >&2
    exit 2
    ;;
esac
