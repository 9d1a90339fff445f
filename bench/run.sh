#!/usr/bin/env bash
# Every benchmark in one run: builds Release, starts a throwaway MariaDB,
# runs hot_path, alloc, the MySQL/PostgreSQL write-path sweep, ingest,
# ingest_tool (auditpipe ingest against LOAD DATA, mariadb-import, \copy, .import),
# sink_ceiling, stall, overload and spill_drain, and writes CSV (and Google Benchmark JSON) plus PNG charts under
# results/<time>/ (results/latest points at it).
#
#   bench/run.sh                    # full size (about 40 minutes on 2 cores)
#   bench/run.sh --quick            # smaller runs, for trying the script out
#   bench/run.sh --baseline REV     # also hot_path and alloc of commit REV, in
#                                   # turn with this tree's (bench/ab.sh), for
#                                   # before/after tables: results/<time>/ab.txt
#
# The machine is shared and noisy: compare within one run (ratios), and
# look at medians; Google Benchmark suites repeat 3 times.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
baseline=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --baseline) baseline=${2:?--baseline needs a commit}; shift ;;
    *) echo "usage: bench/run.sh [--quick] [--baseline REV]" >&2; exit 2 ;;
  esac
  shift
done
./scripts/deps.sh
if ! command -v gnuplot >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null
fi

build=build/bench
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DAUDITPIPE_BUILD_TESTS=OFF \
      -DAUDITPIPE_BUILD_EXAMPLES=OFF -DAUDITPIPE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

results=results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$results"
ln -sfn "$(basename "$results")" results/latest

export AUDITPIPE_MARIADB_DIR AUDITPIPE_POSTGRES_DIR
AUDITPIPE_MARIADB_DIR=$(mktemp -d /tmp/auditpipe-bench-mariadb.XXXXXX)
AUDITPIPE_POSTGRES_DIR=$(mktemp -d /tmp/auditpipe-bench-postgres.XXXXXX)
trap './scripts/mariadb.sh destroy; ./scripts/postgres.sh destroy' EXIT
./scripts/mariadb.sh start
./scripts/postgres.sh start
mysql_url=$(./scripts/mariadb.sh url)
postgres_url=$(./scripts/postgres.sh url)

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel: $(uname -r)"
  echo "compiler: $(c++ --version | head -1)"
  echo "mariadb: $(mariadbd --version | head -1)"
  echo "postgresql: $(ls /usr/lib/postgresql | sort -V | tail -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$results/machine.txt"

reps=3
scale=1.0
records=10000000
hot_filter=()
if [ $quick -eq 1 ]; then
  reps=2  # the fewest that still reports medians
  scale=0.1
  records=1000000
  hot_filter=(--benchmark_filter='^timer|/threads:(1|2)$')
fi

echo "=== hot_path" >&2
"$build/bench/hot_path" --benchmark_repetitions=$reps --benchmark_report_aggregates_only=true \
  --benchmark_out="$results/hot_path.json" --benchmark_out_format=json "${hot_filter[@]}" \
  | tee "$results/hot_path.txt"
echo "=== alloc" >&2
"$build/bench/alloc" --benchmark_repetitions=$reps --benchmark_report_aggregates_only=true \
  --benchmark_out="$results/alloc.json" --benchmark_out_format=json | tee "$results/alloc.txt"
echo "=== write paths" >&2
rows=$(awk -v s=$scale 'BEGIN {printf "%d", 300000 * s}')
"$build/bench/write_paths" "$mysql_url" "$rows" | tee "$results/write_paths_mysql.txt"
"$build/bench/write_paths" "$postgres_url" "$rows" | tee "$results/write_paths_postgresql.txt"
echo "=== ingest" >&2
"$build/bench/ingest" "$mysql_url" "$results" "$scale" | tee "$results/ingest.txt"
echo "=== ingest_tool" >&2
bench/ingest_tool.sh "$build" "$results" "$(awk -v s=$scale 'BEGIN {printf "%d", 2000000 * s}')"
echo "=== sink_ceiling" >&2
ceiling_rows=$(awk -v s=$scale 'BEGIN {printf "%d", 400000 * s}')
"$build/bench/sink_ceiling" "$postgres_url" "$results" "$ceiling_rows" $((reps + 2)) \
  | tee "$results/sink_ceiling.txt"
echo "=== stall" >&2
"$build/bench/stall" "$mysql_url" "$results" "$records" 5 | tee "$results/stall.txt"
echo "=== overload" >&2
overload_records=$(awk -v s=$scale 'BEGIN {printf "%d", 2000000 * s}')
"$build/bench/overload" "$mysql_url" "$overload_records" 5 indexed | tee "$results/overload.txt"
echo "=== spill_drain" >&2
"$build/bench/spill_drain" "$mysql_url" 10 | tee "$results/spill_drain.txt"

if [ -n "$baseline" ]; then
  echo "=== before/after: $baseline and this tree" >&2
  bench/ab.sh "$baseline" "$reps" 0 | tee "$results/ab.txt"
fi

# CSV for the charts, from what the programs wrote.
for t in 1 2; do
  awk -v t=$t -F'"' '
    /"name"/ { name = $4 }
    /"run_type": "aggregate"/ { agg = 1 }
    /"aggregate_name": "median"/ { med = 1 }
    /"real_time"/ { split($0, a, ": "); rt = a[2]; sub(",", "", rt) }
    /"p50_ns"/ { split($0, a, ": "); p50 = a[2]; sub(",", "", p50);
                 if (med && name ~ ("threads:" t "_median$")) { split(name, n, "/"); print n[1] "," rt "," p50 }
                 med = 0 }
  ' "$results/hot_path.json" > "$results/hot_path_threads$t.csv"
done
for p in block drop; do
  grep "^$p," "$results/stall_rss.csv" > "$results/stall_rss_$p.csv" || true
done
gnuplot -e "dir='$results'" bench/charts.gp
echo "results in $results (charts: ingest.png, hot_path.png, stall_rss.png)" >&2
