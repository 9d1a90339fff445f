#!/usr/bin/env bash
# A/B of the producer path, the pool and ingestion between an older commit
# and the working tree, in one run: builds REV into a second tree
# (build/ab-base, from a clone at REV), then runs both builds' hot_path
# (auditpipe's log() and its floor, 1, 2, 4 and 100 producers), alloc and
# ingest, alternately (A B A B ...), and prints the medians. The head's
# alloc also runs under LD_PRELOAD of jemalloc and of mimalloc, so its
# new/delete row shows those allocators beside glibc's. Both sides share the
# machine's state at each moment, so compare the ratios, not the absolute
# numbers.
#
#   bench/ab.sh REV [runs] [ingest-scale]     # defaults: 3 runs, scale 0.25
#                                             # (scale 0: no ingest, no server)
#
# Needs a MariaDB server for ingest: a throwaway one is started (and removed)
# unless AUDITPIPE_BENCH_MYSQL_URL names one.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${1:?usage: bench/ab.sh REV [runs] [ingest-scale]}
runs=${2:-3}
scale=${3:-0.25}
./scripts/deps.sh
# The allocators alloc is compared with (only their shared libraries are
# used, preloaded).
if [ "$(dpkg-query -W -f='${Status}\n' libjemalloc-dev libmimalloc-dev 2>/dev/null |
      grep -c 'ok installed')" != 2 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libjemalloc-dev libmimalloc-dev >/dev/null
fi
jemalloc=$(dpkg -L libjemalloc2 | grep -m1 '/libjemalloc\.so\.2$')
mimalloc=$(dpkg -L libmimalloc2.0 | grep -m1 '/libmimalloc\.so\.2$')

# AB_REUSE=1: run the trees build/ab-base and build/ab-head as they are
# (REV then only labels the output), e.g. after a run that built them.
if [ "${AB_REUSE:-0}" != 1 ]; then
  base_src=build/ab-base-src
  rm -rf "$base_src"
  git clone -q --no-checkout . "$base_src"
  git -C "$base_src" checkout -q "$(git rev-parse "$rev")"
  configure() {
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DAUDITPIPE_BUILD_TESTS=OFF \
      -DAUDITPIPE_BUILD_EXAMPLES=OFF -DAUDITPIPE_BUILD_BENCH=ON >/dev/null
    cmake --build "$2" -j"$(nproc)" --target hot_path alloc ingest >/dev/null
  }
  configure "$base_src" build/ab-base
  configure . build/ab-head
fi

url=${AUDITPIPE_BENCH_MYSQL_URL:-}
if [ -z "$url" ] && [ "$scale" != 0 ]; then
  export AUDITPIPE_MARIADB_DIR AUDITPIPE_MARIADB_PORT=${AUDITPIPE_MARIADB_PORT:-33316}
  AUDITPIPE_MARIADB_DIR=$(mktemp -d /tmp/auditpipe-ab-mariadb.XXXXXX)
  trap './scripts/mariadb.sh destroy' EXIT
  ./scripts/mariadb.sh start >/dev/null
  url=$(./scripts/mariadb.sh url)
fi

out=$(mktemp -d /tmp/auditpipe-ab.XXXXXX)
filter='^(auditpipe|floor)/iterations:[0-9]+/real_time/threads:(1|2|4|100)$'
alloc_filter='^(pool|pool_depot|new_delete|pmr_pool)/'
for i in $(seq 1 "$runs"); do
  # Each side goes first every other round: the server is still busy with
  # the previous run's tables for a while, and that must not always fall
  # on the same side.
  order="base head"
  [ $((i % 2)) -eq 0 ] && order="head base"
  for side in $order; do
    echo "=== run $i: $side" >&2
    "build/ab-$side/bench/hot_path" --benchmark_filter="$filter" \
      --benchmark_out="$out/hot_$side$i.json" --benchmark_out_format=json >/dev/null
    "build/ab-$side/bench/alloc" --benchmark_filter="$alloc_filter" \
      --benchmark_out="$out/alloc_$side$i.json" --benchmark_out_format=json >/dev/null
    if [ "$scale" != 0 ]; then
      "build/ab-$side/bench/ingest" "$url" "$out/ingest_$side$i" "$scale" 1 >"$out/ingest_$side$i.txt"
    fi
  done
  for malloc in jemalloc mimalloc; do
    LD_PRELOAD=${!malloc} build/ab-head/bench/alloc --benchmark_filter='^new_delete/' \
      --benchmark_out="$out/alloc_$malloc$i.json" --benchmark_out_format=json >/dev/null
  done
done

# hot_path: name p50_ns real_time_ns per run, from Google Benchmark's JSON.
hot() {
  awk -F'"' '
    /"name"/ { name = $4 }
    /"real_time"/ { split($0, a, ": "); rt = a[2]; sub(",", "", rt) }
    /"p50_ns"/ { split($0, a, ": "); p = a[2]; sub(",", "", p); print name, p, rt }
  ' "$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
echo "hot_path (ns per log(): p50 of timed calls; mean = wall time / calls), median of $runs runs"
printf '%-36s %10s %10s %10s %10s %8s\n' benchmark "base p50" "head p50" "base mean" "head mean" "head/base"
for name in $(hot "$out/hot_base1.json" | awk '{ print $1 }'); do
  bp=$(for i in $(seq 1 "$runs"); do hot "$out/hot_base$i.json"; done | awk -v n="$name" '$1 == n { print $2 }' | median)
  hp=$(for i in $(seq 1 "$runs"); do hot "$out/hot_head$i.json"; done | awk -v n="$name" '$1 == n { print $2 }' | median)
  bm=$(for i in $(seq 1 "$runs"); do hot "$out/hot_base$i.json"; done | awk -v n="$name" '$1 == n { print $3 }' | median)
  hm=$(for i in $(seq 1 "$runs"); do hot "$out/hot_head$i.json"; done | awk -v n="$name" '$1 == n { print $3 }' | median)
  printf '%-36s %10.1f %10.1f %10.1f %10.1f %8.3f\n' "${name%%/iterations*}/${name##*threads:}t" \
    "$bp" "$hp" "$bm" "$hm" "$(awk -v a="$hm" -v b="$bm" 'BEGIN { print a / b }')"
done

# alloc: name real_time_ns per run.
alloc() { awk -F'"' '/"name"/ { name = $4 } /"real_time"/ { split($0, a, ": "); rt = a[2]; sub(",", "", rt); print name, rt }' "$1"; }
pick_alloc() {  # pick_alloc <side> <name>: median ns over the runs, or - if absent
  local v
  v=$(for i in $(seq 1 "$runs"); do alloc "$out/alloc_$1$i.json"; done | awk -v n="$2" '$1 == n { print $2 }')
  if [ -z "$v" ]; then echo -; else printf '%.1f' "$(echo "$v" | median)"; fi
}
echo
echo "alloc (ns per acquire + release, or allocate + free, per thread), median of $runs runs"
printf '%-28s %10s %10s %10s %10s\n' contender 1t 2t 4t allocator
for row in "base pool" "head pool" "head pool_depot" "head new_delete glibc" "jemalloc new_delete jemalloc" \
           "mimalloc new_delete mimalloc" "head pmr_pool"; do
  set -- $row
  printf '%-28s' "$1 $2"
  for t in 1 2 4; do printf ' %10s' "$(pick_alloc "$1" "$2/real_time/threads:$t")"; done
  printf ' %10s\n' "${3:-}"
done

[ "$scale" = 0 ] && { echo "(raw outputs in $out)"; exit 0; }
echo
echo "ingest (rows/s, and the ratio to the fastest hand-written client loop in the same run), median of $runs runs"
printf '%-44s %12s %12s %10s %10s\n' contender "base rows/s" "head rows/s" "base/best" "head/best"
# Rows of the closing table: name, rows/s, vs best raw.
rows() { awk '/^contender/ { t = 1; next } t && NF > 8 { n = NF; r = $(n - 7); v = $(n - 6); $0 = substr($0, 1, 42); sub(/ +$/, ""); print $0 "|" r "|" v }' "$1"; }
rows "$out/ingest_base1.txt" | cut -d'|' -f1 | grep '^auditpipe' | while read -r name; do
  pick() { for i in $(seq 1 "$runs"); do rows "$out/ingest_$1$i.txt"; done | awk -F'|' -v n="$name" -v c="$2" '$1 == n { print $c }' | median; }
  printf '%-44s %12.0f %12.0f %10.3f %10.3f\n' "$name" "$(pick base 2)" "$(pick head 2)" "$(pick base 3)" "$(pick head 3)"
done
echo "(raw outputs in $out)"
