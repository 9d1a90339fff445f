# Sourced by the PostgreSQL pair's fault tests: `fresh_pg_pair SRC MODE`
# exits 77 (skipped) when no pair runs in AUDITPIPE_PG_STANDBY_DIR, else
# rebuilds it (destroy, start --MODE: sync or async) and, on the way out,
# leaves a fresh synchronous pair for the next test. Sets `pair`, the
# pair's script.
fresh_pg_pair() {
  pair="$1/scripts/postgres-standby.sh"
  [ -n "${AUDITPIPE_PG_STANDBY_DIR:-}" ] || { echo "AUDITPIPE_PG_STANDBY_DIR not set: skipped"; exit 77; }
  if ! grep -q ': running' <<<"$("$pair" status)"; then
    echo "no PostgreSQL pair runs in $AUDITPIPE_PG_STANDBY_DIR: skipped"
    exit 77
  fi
  trap '"$pair" destroy >/dev/null; "$pair" start --sync >/dev/null || "$pair" status' EXIT
  "$pair" destroy >/dev/null
  "$pair" start "--$2" >/dev/null || exit 1
}
