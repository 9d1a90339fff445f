#!/usr/bin/env bash
# Smoke test of the throwaway Galera cluster (scripts/galera.sh) the cluster
# tests run against: replication, a crashed node's catch-up by IST, the loss
# of quorum and its return.
#
#   tests/cluster/galera_smoke.sh <source dir>
#
# Takes the cluster from AUDITPIPE_GALERA_DIR (scripts/test.sh starts it);
# exits 77 (skipped) when it is not set or no node runs. Leaves the cluster
# whole (three synced nodes), whatever happens.
set -euo pipefail

src=${1:?usage: $0 <source dir>}
galera="$src/scripts/galera.sh"
[ -n "${AUDITPIPE_GALERA_DIR:-}" ] || { echo "AUDITPIPE_GALERA_DIR not set: skipped"; exit 77; }
if ! grep -q ': running' <<<"$("$galera" status)"; then
  echo "no Galera node runs in $AUDITPIPE_GALERA_DIR: skipped"
  exit 77
fi
trap '"$galera" start || "$galera" status' EXIT
"$galera" start  # all three synced (idempotent)

table=smoke_$$
fail() { echo "FAILED: $*" >&2; "$galera" status >&2; exit 1; }

# sql N statement: as the test user on node N (its own URL), tab-separated.
sql() {
  local url
  url=$("$galera" url "$1")
  local rest=${url#mysql://} hostport db
  hostport=${rest#*@}
  db=${hostport#*/}
  hostport=${hostport%%/*}
  local userpw=${rest%%@*}
  timeout 30 mariadb --no-defaults -h "${hostport%:*}" -P "${hostport##*:}" -u "${userpw%%:*}" \
    -p"${userpw#*:}" -N -B "$db" -e "$2"
}

# eventually <seconds> <command...>: until the command succeeds.
eventually() {
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}

# rows N: the rows of the table node N has, causally after every commit the
# cluster has certified (wsrep_sync_wait).
rows() { sql "$1" "SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*) FROM $table"; }
has_rows() { [ "$(rows "$1")" = "$2" ]; }
insert() { sql "$1" "INSERT INTO $table (v) VALUES ($2)"; }
log_count() { grep -c "$2" "$AUDITPIPE_GALERA_DIR/node$1/error.log" || true; }

echo "--- replication: written on node 1, read on nodes 2 and 3"
sql 1 "CREATE TABLE $table (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)"
insert 1 1
has_rows 2 1 || fail "node 2 does not have node 1's row"
has_rows 3 1 || fail "node 3 does not have node 1's row"

echo "--- node 2 killed (-9), a write on node 1, node 2 back: it catches up by IST"
ist_before=$(log_count 2 'rsync IST completed on joiner')
sst_before=$(log_count 2 'rsync SST completed on joiner')
"$galera" kill 2
eventually 30 insert 1 2 || fail "node 1 refused a write with node 2 down"
has_rows 3 2 || fail "node 3 does not have the write made while node 2 was down"
"$galera" start-node 2
has_rows 2 2 || fail "node 2 did not catch up"
# (the rsync SST script runs either way; its log says which transfer it was)
[ "$(log_count 2 'rsync IST completed on joiner')" -gt "$ist_before" ] ||
  fail "node 2 caught up without an IST"
[ "$(log_count 2 'rsync SST completed on joiner')" -eq "$sst_before" ] ||
  fail "node 2 needed a full SST"

echo "--- nodes 2 and 3 killed: node 1 alone is not primary and refuses writes (1047)"
"$galera" kill 2
"$galera" kill 3
node_status() { grep "^node $1:" <<<"$("$galera" status)"; }
nonprimary() { grep -q 'non-Primary' <<<"$(node_status 1)"; }
eventually 30 nonprimary || fail "node 1 still primary alone"
refused=""
for _ in $(seq 1 25); do
  if out=$(insert 1 3 2>&1); then fail "node 1 took a write without quorum"; fi
  refused=$(grep '^ERROR' <<<"$out" || echo "$out")
  grep -q 'ERROR 1047' <<<"$out" && break
  sleep 0.2  # during the view change the refusal may be another error (1180)
done
grep -q 'ERROR 1047' <<<"$refused" || fail "node 1 refused the write, but not with 1047: $refused"
echo "refused: $refused"

echo "--- nodes 2 and 3 back: the cluster is primary again, every row everywhere"
"$galera" start
for n in 1 2 3; do
  grep -q 'Synced), cluster size 3, Primary' <<<"$(node_status "$n")" ||
    fail "node $n not synced in a primary cluster of 3"
done
insert 1 4 || fail "node 1 refused a write after quorum came back"
for n in 1 2 3; do has_rows "$n" 3 || fail "node $n has $(rows "$n") rows, not 3"; done
sql 2 "DROP TABLE $table"
echo "--- passed"
