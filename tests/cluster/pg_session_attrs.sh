#!/usr/bin/env bash
# A URL that names a standby (scripts/postgres-standby.sh's pair), for
# readers and for loggers:
#   - a reader (auditpipe::Database, `auditpipe verify`) on the standby alone,
#     without options, and one asking for target_session_attrs=standby;
#   - a logger with target_session_attrs=any and the standby listed first:
#     after the standby refuses a write (25006), the primary gets the writes;
#   - the primary killed, the standby not yet promoted (a failover): a logger
#     with somewhere to keep records starts (the read-only standby counts as
#     unreachable, and its message says so), one without throws
#     auditpipe::unreachable, and once the standby is promoted everything
#     logged is written.
#
#   tests/cluster/pg_session_attrs.sh <source dir> <pg_attrs_probe> [<auditpipe cli>]
#
# Every check runs, and each prints ok or FAILED. Exits 77 when the pair
# does not run; rebuilds it (destroy, start --sync) on the way out.
set -uo pipefail

src=${1:?usage: $0 <source dir> <pg_attrs_probe> [<auditpipe cli>]}
probe=${2:?pg_attrs_probe}
cli=${3:-false}
. "$(dirname "$0")/pg_pair.sh"
fresh_pg_pair "$src" sync

both=$("$pair" url)
primary=$("$pair" url 1)
standby=$("$pair" url 2)
# The same pair, standby first.
rest=${both#*@}
hosts=${rest%%/*}
standby_first="${both%%@*}@${hosts#*,},${hosts%%,*}/${rest#*/}"
standby_host=${hosts#*,}

failed=0
out=""
# expect <name> <exit status> <text the output must hold, or ""> <command...>
expect() {
  local name=$1 want=$2 text=$3 rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  echo "$out" | tail -4 | cut -c1-600 | sed 's/^/    /'
  if [ "$rc" -eq "$want" ] && { [ -z "$text" ] || grep -qF -- "$text" <<<"$out"; }; then
    echo "ok: $name"
  else
    echo "FAILED: $name (exit $rc, want $want${text:+, output holding '$text'})"
    failed=1
  fi
}

"$probe" exec "$primary" "DROP TABLE IF EXISTS audit_log" || exit 1
"$probe" exec "$primary" "DROP TABLE IF EXISTS audit_log_seals" || exit 1
"$probe" exec "$primary" "DROP TABLE IF EXISTS audit_log_unsealed" || exit 1

echo "--- readers on the standby"
expect "a reader on the standby alone, no options" 0 "in_recovery=t" "$probe" read "$standby"
expect "a reader asking for target_session_attrs=standby" 0 "in_recovery=t" \
  "$probe" read "$both?target_session_attrs=standby"
if [ "$cli" != false ]; then
  expect "a sealed table written through the pair" 0 "written=100" \
    "$probe" write "$both?seal=hash" 100 10 0
  sleep 1  # replayed on the standby (synchronous commit waits for the flush only)
  expect "auditpipe verify on the standby alone, no options" 0 "verified" \
    "$cli" verify "$standby" --table audit_log
  expect "auditpipe verify with target_session_attrs=prefer-standby" 0 "verified" \
    "$cli" verify "$both?target_session_attrs=prefer-standby" --table audit_log
  "$probe" exec "$primary" "DROP TABLE audit_log, audit_log_seals, audit_log_unsealed" || exit 1
fi

echo "--- a logger with target_session_attrs=any, the standby listed first"
"$probe" exec "$primary" "DROP TABLE IF EXISTS audit_log" || exit 1
# The table made on the primary (replicated): the standby's check passes.
expect "the table made through the pair" 0 "written=1" "$probe" write "$both" 1 10 0
expect "every record written, on the primary" 0 "written=3000" \
  "$probe" write "$standby_first?target_session_attrs=any" 3000 15 0

echo "--- the primary killed, the standby not promoted"
"$pair" kill-primary
expect "a logger that may start while unreachable starts, naming the read-only standby" 0 \
  "$standby_host" "$probe" write "$both" 0 1 1
grep -qi "read-only" <<<"$out" || { echo "FAILED: the reason does not say read-only"; failed=1; }
expect "one with nowhere to keep records throws auditpipe::unreachable" 3 "threw unreachable" \
  "$probe" write "$both" 0 1 0
grep -qi "read-only" <<<"$out" || { echo "FAILED: the message does not say read-only"; failed=1; }
expect "a logger on the standby alone starts too" 0 "constructed: health=down" \
  "$probe" write "$standby" 0 1 1
# Logged during the failover, written once the standby is promoted.
"$probe" write "$both" 2000 40 1 >"$AUDITPIPE_PG_STANDBY_DIR.probe.out" 2>&1 &
pid=$!
sleep 4
echo "promote the standby"
"$pair" promote
rc=0
wait "$pid" || rc=$?
tail -4 "$AUDITPIPE_PG_STANDBY_DIR.probe.out" | cut -c1-600 | sed 's/^/    /'
if [ "$rc" -eq 0 ] && grep -qF "written=2000 unwritten=0" "$AUDITPIPE_PG_STANDBY_DIR.probe.out"; then
  echo "ok: the records logged during the failover are written"
else
  echo "FAILED: the records logged during the failover are written (exit $rc)"
  failed=1
fi
rm -f "$AUDITPIPE_PG_STANDBY_DIR.probe.out"

[ "$failed" -eq 0 ] && echo "--- passed" || echo "--- FAILED"
exit "$failed"
