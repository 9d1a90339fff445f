#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests and benchmarks: its own data
# directory, loopback port and socket directory; never the system cluster.
#
#   scripts/postgres.sh start    # init (first time) and start
#   scripts/postgres.sh stop     # shut down (the data directory stays)
#   scripts/postgres.sh kill     # kill -9 the server and its backends (a crash; start recovers)
#   scripts/postgres.sh destroy  # stop and remove the data directory
#   scripts/postgres.sh url      # the test user's URL
#
# Environment: AUDITPIPE_POSTGRES_DIR (default build/postgres),
# AUDITPIPE_POSTGRES_PORT (default 25432). PostgreSQL will not run as root:
# as root, the server runs as the `postgres` user the Debian package creates.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${AUDITPIPE_POSTGRES_DIR:-$PWD/build/postgres}
port=${AUDITPIPE_POSTGRES_PORT:-25432}
user=auditpipe
password=auditpipe-test
database=auditpipe_test
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres: no PostgreSQL server installed (package postgresql)" >&2; exit 1; }

as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
psql_admin() { as_server "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q "$@"; }

start() {
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  local fresh=0
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    fresh=1
    as_server "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  if ! as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null ||
      { tail -20 "$dir/server.log" >&2; exit 1; }
  fi
  if [ $fresh -eq 1 ]; then
    # CREATEROLE: a test makes an account without grants, to see verify name them.
    # pg_checkpoint: bench/sink_ceiling starts each timed run from a checkpoint.
    psql_admin -c "CREATE ROLE $user LOGIN CREATEROLE PASSWORD '$password'" \
               -c "GRANT pg_checkpoint TO $user" \
               -c "CREATE DATABASE $database OWNER $user ENCODING 'UTF8'"
  fi
}

stop() {
  if [ -f "$dir/data/PG_VERSION" ] && as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  fi
  return 0
}

# kill -9 of the postmaster alone leaves its backends attached to the shared
# memory, and the next start refuses to run beside them: they go too.
crash() {
  local pid procs p
  pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null) || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  procs="$pid $(pgrep -P "$pid" | tr '\n' ' ')"
  kill -9 $procs 2>/dev/null || true
  for p in $procs; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  kill) crash ;;
  destroy) stop; rm -rf "$dir" ;;
  url) echo "postgresql://$user:$password@127.0.0.1:$port/$database" ;;
  *) echo "usage: $0 start|stop|kill|destroy|url" >&2; exit 2 ;;
esac
