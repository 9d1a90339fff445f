#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as
# errors, starts the servers the tests use, runs every test with CTest, then
# runs the concurrent tests again under ASan+UBSan and under TSan. Exits
# non-zero on any failure; servers are stopped either way.
#
#   ./scripts/test.sh            # everything
#   ./scripts/test.sh --quick    # the main build only (no sanitizer builds, so no
#                                # clang thread-safety analysis, no fuzzing)
#
# The fuzz targets run for AUDITPIPE_FUZZ_SECONDS each (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc)

./scripts/deps.sh

# The servers the tests use: a throwaway MariaDB and PostgreSQL in
# temporary directories, stopped and removed on the way out, whatever happens.
export AUDITPIPE_MARIADB_DIR AUDITPIPE_POSTGRES_DIR AUDITPIPE_GALERA_DIR AUDITPIPE_PG_STANDBY_DIR
AUDITPIPE_MARIADB_DIR=$(mktemp -d /tmp/auditpipe-mariadb.XXXXXX)
AUDITPIPE_POSTGRES_DIR=$(mktemp -d /tmp/auditpipe-postgres.XXXXXX)
# And the clusters of the cluster tests (label cluster): a 3-node Galera
# cluster and a PostgreSQL primary with a streaming standby. They take about
# 20 s to start (state transfers), so they start in the background while the
# build runs; the tests wait for them.
AUDITPIPE_GALERA_DIR=$(mktemp -d /tmp/auditpipe-galera.XXXXXX)
AUDITPIPE_PG_STANDBY_DIR=$(mktemp -d /tmp/auditpipe-pg-standby.XXXXXX)
cluster_starts=()
background_pid=
cleanup() {
  # The background builds, if the command ends before them (interrupted).
  if [ -n "$background_pid" ] && kill -0 "$background_pid" 2>/dev/null; then
    pkill -P "$background_pid" 2>/dev/null || true
    kill "$background_pid" 2>/dev/null || true
  fi
  for pid in "${cluster_starts[@]}"; do wait "$pid" 2>/dev/null || true; done
  ./scripts/mariadb.sh destroy
  ./scripts/postgres.sh destroy
  ./scripts/galera.sh destroy
  ./scripts/postgres-standby.sh destroy
  rm -f "$AUDITPIPE_GALERA_DIR.log" "$AUDITPIPE_PG_STANDBY_DIR.log"
}
trap cleanup EXIT
./scripts/mariadb.sh start
./scripts/postgres.sh start
./scripts/galera.sh start >"$AUDITPIPE_GALERA_DIR.log" 2>&1 &
cluster_starts+=($!)
./scripts/postgres-standby.sh start --sync >"$AUDITPIPE_PG_STANDBY_DIR.log" 2>&1 &
cluster_starts+=($!)
clusters_started() {  # waits for the background starts; shows what a failed one said
  local ok=0 i logs=("$AUDITPIPE_GALERA_DIR.log" "$AUDITPIPE_PG_STANDBY_DIR.log")
  for i in "${!cluster_starts[@]}"; do
    if ! wait "${cluster_starts[$i]}"; then
      cat "${logs[$i]}" >&2
      ok=1
    fi
    rm -f "${logs[$i]}"
  done
  cluster_starts=()
  return $ok
}
# Their URLs, for the tests that take them from the environment (the README
# blocks that need a server: readme_snippets_servers).
export AUDITPIPE_TEST_MYSQL_URL AUDITPIPE_TEST_POSTGRES_URL
AUDITPIPE_TEST_MYSQL_URL=${AUDITPIPE_TEST_MYSQL_URL:-$(./scripts/mariadb.sh url)}
AUDITPIPE_TEST_POSTGRES_URL=${AUDITPIPE_TEST_POSTGRES_URL:-$(./scripts/postgres.sh url)}

# build <dir> <cmake args...> [--target t...]: configure and build one tree.
build() {
  local dir=$1 args=() targets=()
  shift
  while [ $# -gt 0 ]; do
    if [ "$1" = --target ]; then
      shift
      targets=(--target "$@")
      break
    fi
    args+=("$1")
    shift
  done
  echo "=== build $dir (at ${SECONDS} s)" >&2
  cmake -S . -B "$dir" -DAUDITPIPE_WERROR=ON "${args[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs" "${targets[@]}"
}

status=0
failed_trees=()
step() {  # step <name> <command...>: runs a step, remembers a failure, goes on
  local name=$1
  shift
  echo "=== $name (at ${SECONDS} s)" >&2
  if ! "$@"; then
    echo "=== FAILED: $name" >&2
    status=1
    # A failed ctest run's tree: its failed tests' output is shown again at
    # the end, where a log read from its tail (CI) shows it.
    local args=("$@") i
    for i in "${!args[@]}"; do
      if [ "${args[$i]}" = --test-dir ]; then failed_trees+=("${args[$((i + 1))]}"); fi
    done
  fi
  # Always 0: under set -e a failed step must not end the script before the
  # later steps and the failed tests' output at the end.
  return 0
}

# Unity builds of the libraries, programs and benchmarks (the test programs
# compile file by file: tests/CMakeLists.txt): the command is bound by CPU
# as a whole, and the libraries of the ASan tree took 331 CPU s so against
# 573 s file by file (clang, back to back here).
build build/test -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON

if [ $quick -eq 0 ]; then
  # -O1 -g1 (line tables: the reports still name file and line): GCC
  # compiles a sanitized file in half the time it takes at RelWithDebInfo's
  # -O2 -g (sql_sink.cpp 30.8 s -> 14.6 s, fault_test.cpp 33.6 -> 14.6), and
  # the two sanitizer trees were most of this command's time. (The files
  # under tests/ compile at -Og there too: AUDITPIPE_TEST_OPTIMIZATION.)
  sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                   -DAUDITPIPE_BUILD_EXAMPLES=OFF -DAUDITPIPE_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON)
  # The sanitizer and fuzz trees build in the background, one after another,
  # while the Release tests run: those wait on servers, sleeps and fsyncs for
  # about half their time (8.5 of 18 CPU-minutes used in a 9-minute run), and
  # the builds take that half. SCHED_IDLE: a build gets the CPU only when no
  # test wants it, so the tests run as they would alone; and the idle I/O
  # class, so its writes do not queue ahead of the tests' fsyncs. Each
  # tree's output goes to build/<tree>.log, shown when the tree is waited for.
  background_builds() {
    chrt --idle -p 0 $BASHPID >/dev/null || true  # where not allowed: at normal priority
    ionice -c 3 -p $BASHPID >/dev/null 2>&1 || true
    local tree rc
    for tree in asan tsan fuzz; do
      # (The status file appears only once it holds the status: a
      # redirection around the build would create it, empty, as the build
      # begins, and built() would take a tree still building for failed.)
      if "build_$tree" >"build/$tree.log" 2>&1; then rc=0; else rc=1; fi
      echo "$rc" >"build/$tree.rc.part" && mv "build/$tree.rc.part" "build/$tree.rc"
    done
  }
  # Only what the concurrent tests run is built there (target concurrent_tests).
  # ASan+UBSan with clang: GCC's UBSan instrumentation nearly doubles its
  # compile time (fault_test.cpp at -O1: GCC 17.9 s with both, 11.1 s ASan
  # alone; clang 11.2 s with both), and this tree was the longest build.
  # The same clang compile runs clang's thread-safety analysis: a member
  # guarded by a mutex touched without it, or a *_locked function called
  # without the lock, fails this build. The tree compiles every library the
  # project has (the concurrent tests link all of them), so a separate
  # analysis-only tree would compile the same files again (82 s).
  build_asan() {
    build build/asan -DCMAKE_CXX_COMPILER=clang++ -DAUDITPIPE_ASAN=ON "${sanitizer_flags[@]}" \
      -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" --target concurrent_tests auditpipe_cli
  }
  build_tsan() { build build/tsan -DAUDITPIPE_TSAN=ON "${sanitizer_flags[@]}" --target concurrent_tests; }
  # libFuzzer (clang) on the URL parser and the spill-file reader, for a
  # bounded time each.
  build_fuzz() {
    build build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUDITPIPE_FUZZ=ON \
      -DAUDITPIPE_BUILD_TESTS=OFF -DAUDITPIPE_BUILD_EXAMPLES=OFF -DAUDITPIPE_BUILD_BENCH=OFF \
      -DAUDITPIPE_FUZZ_SECONDS="${AUDITPIPE_FUZZ_SECONDS:-30}" --target url_fuzzer spill_reader_fuzzer
  }
  rm -f build/asan.rc build/tsan.rc build/fuzz.rc build/*.rc.part
  background_builds &
  background_pid=$!
fi
# built <tree>: waits for a background build; 0 if it succeeded. A failed
# one's log is shown and fails the command (its tests are not run).
built() {
  local tree=$1
  while [ ! -f "build/$tree.rc" ]; do
    if ! kill -0 "$background_pid" 2>/dev/null; then break; fi
    sleep 2
  done
  if [ "$(cat "build/$tree.rc" 2>/dev/null)" = 0 ]; then
    echo "=== built build/$tree in the background ($(grep -c '^\[' "build/$tree.log") steps; at ${SECONDS} s)" >&2
    return 0
  fi
  echo "=== FAILED: build build/$tree" >&2
  tail -n 200 "build/$tree.log" >&2
  status=1
  return 1
}

step "clusters started (scripts/galera.sh, scripts/postgres-standby.sh)" clusters_started

step "tests (Release)" ctest --test-dir build/test --no-tests=error --output-on-failure -j"$jobs"

if [ $quick -eq 0 ]; then
  # The sanitizers slow everything down; the million-row test writes fewer.
  export AUDITPIPE_TEST_ROWS=100000
  # and a wait may end further past its deadline (tests/support/wait_slack.h).
  export AUDITPIPE_TEST_WAIT_SLACK_MS=100
  if built asan; then
    step "concurrent tests under ASan+UBSan" \
      env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build/asan -L concurrent --no-tests=error --output-on-failure -j"$jobs"
  fi
  # TSan's shadow memory needs a fixed layout: run without address-space
  # randomization (setarch -R), which newer kernels' mmap entropy breaks.
  if built tsan; then
    step "concurrent tests under TSan" \
      env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
      setarch "$(uname -m)" -R ctest --test-dir build/tsan -L concurrent --no-tests=error --output-on-failure -j"$jobs"
  fi
  if built fuzz; then
    step "fuzz targets" ctest --test-dir build/fuzz -L fuzz --no-tests=error --output-on-failure -j"$jobs"
  fi
  wait "$background_pid" || true
fi

for tree in "${failed_trees[@]}"; do
  echo "=== why tests failed in $tree" >&2
  ./scripts/test-failures.sh "$tree" 40 >&2 || true
done
[ $status -eq 0 ] && echo "=== all tests passed (${SECONDS} s)" >&2 || echo "=== some tests FAILED (${SECONDS} s)" >&2
exit $status
