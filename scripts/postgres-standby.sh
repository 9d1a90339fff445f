#!/usr/bin/env bash
# A throwaway PostgreSQL primary with a streaming standby for the cluster
# tests: two servers on 127.0.0.1, each with its own data directory, port and
# socket directory; never the system cluster.
#
#   scripts/postgres-standby.sh start [--sync|--async]
#                                          # init (first time) and start both; waits until the
#                                          # standby streams. --sync: synchronous replication
#                                          # (synchronous_standby_names, synchronous_commit=on: a
#                                          # commit returns once the standby has flushed it);
#                                          # --async (the default at init): the standby may lag.
#                                          # Given to a running pair, switches it (reload).
#   scripts/postgres-standby.sh promote      # pg_ctl promote of the standby (it becomes a primary)
#   scripts/postgres-standby.sh kill-primary # kill -9 of the primary's postmaster, as a crash would
#   scripts/postgres-standby.sh stop         # shut down both (the data directories stay)
#   scripts/postgres-standby.sh destroy      # stop both and remove the directory
#   scripts/postgres-standby.sh url          # the test user's URL, primary then standby as a host list
#   scripts/postgres-standby.sh url 1|2      # the primary (1) or the standby (2) alone
#   scripts/postgres-standby.sh status       # per server: running, role, replication state
#
# The standby is a pg_basebackup -R of the primary, streaming over the
# primary's socket from the physical replication slot `standby` (so the
# primary keeps the WAL it has not received). It is a hot standby: it
# answers reads. After a promote the pair is two primaries, the old one
# behind: destroy and start again for a fresh pair (no pg_rewind here).
#
# The URL lists both hosts; the PostgreSQL sink tries them in order and,
# with its default target_session_attrs=read-write, connects to whichever is
# the writable one (the standby is refused at connect until promoted).
#
# Same test user, password and database as scripts/postgres.sh. Environment:
# AUDITPIPE_PG_STANDBY_DIR (default build/pg-standby),
# AUDITPIPE_PG_PRIMARY_PORT (default 25433), AUDITPIPE_PG_STANDBY_PORT (default
# 25434). As root, the servers run as the `postgres` user.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${AUDITPIPE_PG_STANDBY_DIR:-$PWD/build/pg-standby}
primary_port=${AUDITPIPE_PG_PRIMARY_PORT:-25433}
standby_port=${AUDITPIPE_PG_STANDBY_PORT:-25434}
user=auditpipe
password=auditpipe-test
database=auditpipe_test
slot=standby
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres-standby: no PostgreSQL server installed (package postgresql)" >&2; exit 1; }

as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
psql_admin() {  # psql_admin port args...
  local port=$1
  shift
  as_server "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q -X "$@"
}
query() { psql_admin "$1" -At -c "$2" 2>/dev/null; }  # query port sql: one value

running() { [ -f "$dir/$1/PG_VERSION" ] && as_server "$bin/pg_ctl" -D "$dir/$1" status >/dev/null 2>&1; }

server_options() {  # server_options port: what both servers run with
  echo "-p $1 -k $dir -c listen_addresses=127.0.0.1 -c max_connections=100 -c shared_buffers=32MB" \
       "-c wal_level=replica -c max_wal_senders=5 -c max_replication_slots=5" \
       "-c synchronous_commit=on -c hot_standby=on -c wal_receiver_status_interval=1s" \
       "-c wal_retrieve_retry_interval=1s"
}

start_server() {  # start_server name port [extra options]
  local name=$1 port=$2
  shift 2
  running "$name" && return 0
  as_server "$bin/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w -t 60 \
    -o "$(server_options "$port") $*" start >/dev/null || { tail -20 "$dir/$name.log" >&2; exit 1; }
}

mode() { cat "$dir/mode" 2>/dev/null || echo async; }

# The primary's synchronous_standby_names for the mode, set with ALTER
# SYSTEM: switchable by a reload, and never given to the standby (whose
# command line clears it: promoted, it must not wait for a standby of its own).
apply_mode() {
  local names=""
  [ "$(mode)" = sync ] && names=$slot
  psql_admin "$primary_port" -c "ALTER SYSTEM SET synchronous_standby_names = '$names'" \
    -c "SELECT pg_reload_conf()" >/dev/null
}

promoted() { [ -f "$dir/standby/PG_VERSION" ] && [ ! -f "$dir/standby/standby.signal" ]; }

start() {
  case "${1:-}" in
    --sync) mkdir -p "$dir"; echo sync >"$dir/mode" ;;
    --async) mkdir -p "$dir"; echo async >"$dir/mode" ;;
    "") ;;
    *) echo "usage: $0 start [--sync|--async]" >&2; exit 2 ;;
  esac
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  if promoted; then
    echo "postgres-standby: the standby was promoted; destroy and start for a fresh pair" >&2
    exit 1
  fi
  local fresh=0
  if [ ! -f "$dir/primary/PG_VERSION" ]; then
    fresh=1
    as_server "$bin/initdb" -D "$dir/primary" -U postgres --auth-local=trust \
      --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  start_server primary "$primary_port"
  if [ $fresh -eq 1 ]; then
    psql_admin "$primary_port" -c "CREATE ROLE $user LOGIN PASSWORD '$password'" \
      -c "CREATE DATABASE $database OWNER $user ENCODING 'UTF8'"
  fi
  apply_mode
  if [ ! -f "$dir/standby/PG_VERSION" ]; then
    # A slot left from an earlier standby would hold WAL for nobody. The
    # checkpoint is taken at once (-c fast), not spread over minutes.
    psql_admin "$primary_port" -c "SELECT pg_drop_replication_slot('$slot') \
      FROM pg_replication_slots WHERE slot_name = '$slot'" >/dev/null
    as_server "$bin/pg_basebackup" -D "$dir/standby" -R -X stream -C -S "$slot" -c fast \
      -d "host=$dir port=$primary_port user=postgres application_name=$slot" \
      >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
  fi
  start_server standby "$standby_port" "-c synchronous_standby_names=''"
  # Until the primary sees the standby streaming (and, --sync, as its
  # synchronous standby).
  local want=async
  [ "$(mode)" = sync ] && want=sync
  for _ in $(seq 1 150); do
    [ "$(query "$primary_port" "SELECT state || ' ' || sync_state FROM pg_stat_replication \
      WHERE application_name = '$slot'")" = "streaming $want" ] && return 0
    sleep 0.2
  done
  echo "postgres-standby: the standby is not streaming ($want) after 30 s; its log:" >&2
  tail -20 "$dir/standby.log" >&2
  exit 1
}

stop_server() {
  if running "$1"; then as_server "$bin/pg_ctl" -D "$dir/$1" -m fast -w stop >/dev/null; fi
  return 0
}

# The processes of a postmaster that was killed (kill-primary notes them in
# $dir/orphans): they notice and exit within a moment; none may outlive
# kill-primary, stop or destroy.
wait_orphans() {
  local pid left
  [ -f "$dir/orphans" ] || return 0
  for _ in $(seq 1 50); do
    left=""
    for pid in $(cat "$dir/orphans"); do kill -0 "$pid" 2>/dev/null && left+=" $pid"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for pid in $left; do kill -9 "$pid" 2>/dev/null || true; done
  rm -f "$dir/orphans"
}

stop() {
  stop_server standby
  stop_server primary
  wait_orphans
  return 0
}

kill_primary() {
  local pid
  pid=$(head -1 "$dir/primary/postmaster.pid" 2>/dev/null || true)
  running primary || return 0
  pgrep -P "$pid" >>"$dir/orphans" || true
  kill -9 "$pid"
  for _ in $(seq 1 50); do running primary || break; sleep 0.1; done
  wait_orphans
}

promote() {
  running standby || { echo "postgres-standby: the standby does not run" >&2; exit 1; }
  promoted && return 0
  as_server "$bin/pg_ctl" -D "$dir/standby" -w -t 60 promote >/dev/null
}

status() {
  local name port
  for name in primary standby; do
    port=$primary_port
    [ $name = standby ] && port=$standby_port
    if ! running $name; then
      echo "$name: down (port $port)"
      continue
    fi
    if [ "$(query "$port" "SELECT pg_is_in_recovery()")" = t ]; then
      echo "$name: running (port $port): standby, $(query "$port" "SELECT 'receiving ' || \
        coalesce(status, 'nothing') || ', replayed ' || pg_last_wal_replay_lsn() \
        FROM (SELECT 1) one LEFT JOIN pg_stat_wal_receiver ON true")"
    else
      local repl
      repl=$(query "$port" "SELECT string_agg(application_name || ' ' || state || ' ' || sync_state \
        || ' at ' || replay_lsn, ', ') FROM pg_stat_replication")
      echo "$name: running (port $port): primary at $(query "$port" "SELECT pg_current_wal_lsn()")," \
        "synchronous_standby_names '$(query "$port" "SHOW synchronous_standby_names")'," \
        "replicas: ${repl:-none}"
    fi
  done
}

url() {
  case "${1:-}" in
    "") echo "postgresql://$user:$password@127.0.0.1:$primary_port,127.0.0.1:$standby_port/$database" ;;
    1) echo "postgresql://$user:$password@127.0.0.1:$primary_port/$database" ;;
    2) echo "postgresql://$user:$password@127.0.0.1:$standby_port/$database" ;;
    *) echo "usage: $0 url [1|2]" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop ;;
  promote) promote ;;
  kill-primary) kill_primary ;;
  destroy) stop; rm -rf "$dir" ;;
  url) url "${2:-}" ;;
  status) status ;;
  *) echo "usage: $0 start [--sync|--async]|promote|kill-primary|stop|destroy|url [1|2]|status" >&2; exit 2 ;;
esac
