#!/usr/bin/env bash
# PostgreSQL failover under load (issue 15): cluster_producer writes through
# the sink's host list (primary, standby; target_session_attrs=read-write,
# the sink's default) with synchronous replication; the primary is killed -9 mid-run
# and the standby promoted. The promoted standby must hold exactly the
# records whose commit() returned ok, once each.
#
#   tests/cluster/pg_failover.sh <source dir> <cluster_producer> [async]
#
# With `async` (asynchronous replication) it measures instead of checking:
# the commits the old primary acknowledged that never reached the standby
# are printed as lost, and it exits 0 whatever they are.
#
# Exits 77 when the pair does not run; rebuilds it (destroy, start --sync)
# on the way out.
set -euo pipefail

src=${1:?usage: $0 <source dir> <cluster_producer>}
producer=${2:?cluster_producer}
mode=${3:-sync}
. "$(dirname "$0")/pg_pair.sh"
fresh_pg_pair "$src" "$mode"

url="$("$pair" url)?connect_timeout=3"
"$producer" "$url" 8 30 4000 60000 2 "$("$pair" url 2)" &
pid=$!
sleep 8
echo "kill -9 the primary at $(date +%s.%N)"
"$pair" kill-primary
sleep 2
echo "promote the standby at $(date +%s.%N)"
"$pair" promote
"$pair" status || true
rc=0
wait "$pid" || rc=$?
[ "$mode" = async ] && exit 0
exit "$rc"
