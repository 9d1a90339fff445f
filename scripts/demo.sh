#!/usr/bin/env bash
# The main job: builds Release and runs examples/message_platform on the
# embedded default (a SQLite file), printing its report.
#
#   ./scripts/demo.sh [message_platform flags...]   e.g. --threads 8 --messages 200000
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
build=build/release
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DAUDITPIPE_BUILD_TESTS=OFF \
      -DAUDITPIPE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target message_platform -j"$(nproc)" >/dev/null

db="$PWD/$build/message_platform.db"
rm -f "$db" "$db-wal" "$db-shm"
echo "demo: 100 workers auditing 1,000,000 messages into sqlite://$db" >&2
"$build/examples/message_platform" --url "sqlite://$db" "$@"
