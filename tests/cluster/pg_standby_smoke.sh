#!/usr/bin/env bash
# Smoke test of the throwaway PostgreSQL primary + streaming standby
# (scripts/postgres-standby.sh) the cluster tests run against: replication
# in both modes, and with synchronous replication no committed row lost when
# the primary is killed and the standby promoted.
#
#   tests/cluster/pg_standby_smoke.sh <source dir>
#
# Takes the pair from AUDITPIPE_PG_STANDBY_DIR (scripts/test.sh starts it);
# exits 77 (skipped) when it is not set or the pair does not run. The
# failover consumes the pair: it is made again (destroy, start) on the way
# out, in the mode it had, whatever happens.
set -euo pipefail

src=${1:?usage: $0 <source dir>}
pair="$src/scripts/postgres-standby.sh"
[ -n "${AUDITPIPE_PG_STANDBY_DIR:-}" ] || { echo "AUDITPIPE_PG_STANDBY_DIR not set: skipped"; exit 77; }
status=$("$pair" status)
if ! grep -q '^primary: running' <<<"$status" || ! grep -q '^standby: running' <<<"$status"; then
  echo "the primary and standby in $AUDITPIPE_PG_STANDBY_DIR do not run: skipped"
  exit 77
fi
mode=$(cat "$AUDITPIPE_PG_STANDBY_DIR/mode" 2>/dev/null || echo async)
trap '"$pair" destroy; "$pair" start "--$mode" || "$pair" status' EXIT

table=smoke_$$
fail() { echo "FAILED: $*" >&2; "$pair" status >&2; exit 1; }

# psql_on 1|2 [psql args]: psql as the test user on the primary (1) or the
# standby (2).
psql_on() {
  local url rest userpw hostport db
  url=$("$pair" url "$1")
  shift
  rest=${url#postgresql://}
  userpw=${rest%%@*}
  hostport=${rest#*@}
  db=${hostport#*/}
  hostport=${hostport%%/*}
  PGPASSWORD=${userpw#*:} PGCONNECT_TIMEOUT=5 timeout 60 psql -X -q -At -v ON_ERROR_STOP=1 \
    -h "${hostport%:*}" -p "${hostport##*:}" -U "${userpw%%:*}" -d "$db" "$@"
}
sql() { psql_on "$1" -c "$2"; }  # sql 1|2 statement

eventually() {  # eventually <seconds> <command...>: until the command succeeds
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}

rows() { sql "$1" "SELECT count(*) FROM $table"; }
has_rows() { [ "$(rows "$1")" = "$2" ]; }

echo "--- asynchronous: written on the primary, read on the standby"
"$pair" start --async
sql 1 "CREATE TABLE $table (id bigserial PRIMARY KEY, v int NOT NULL)"
sql 1 "INSERT INTO $table (v) VALUES (1)"
eventually 30 has_rows 2 1 || fail "the standby does not have the primary's row"
if sql 2 "INSERT INTO $table (v) VALUES (0)" 2>/dev/null; then fail "the standby took a write"; fi

echo "--- synchronous: 200 commits, the primary killed, the standby promoted: every row there"
"$pair" start --sync
grep -q 'standby streaming sync' <<<"$("$pair" status)" || fail "the standby is not synchronous"
# One session, 200 statements, each its own commit acknowledged by the standby.
for i in $(seq 1 200); do echo "INSERT INTO $table (v) VALUES ($i);"; done | psql_on 1 >/dev/null
"$pair" kill-primary
grep -q '^primary: down' <<<"$("$pair" status)" || fail "the primary still runs after kill-primary"
"$pair" promote
has_rows 2 201 || fail "the promoted standby has $(rows 2) of the 201 committed rows"
[ "$(sql 2 "SELECT max(v) FROM $table")" = 200 ] || fail "the last commit is missing"
sql 2 "INSERT INTO $table (v) VALUES (201)" || fail "the promoted standby refused a write"
echo "--- passed"
