#!/usr/bin/env bash
# The end of each failed test's output from a ctest run, so that a log read
# from its tail (a CI page) says why a test failed, not only which.
#
#   scripts/test-failures.sh <build dir> [lines per test, default 40]
#
# Reads the build tree's Testing/Temporary/LastTestsFailed.log (the names)
# and LastTest.log (every test's output); prints nothing when none failed.
set -euo pipefail

dir=${1:?usage: $0 <build dir> [lines]}
lines=${2:-40}
failed="$dir/Testing/Temporary/LastTestsFailed.log"
log="$dir/Testing/Temporary/LastTest.log"
[ -s "$failed" ] && [ -f "$log" ] || exit 0

while IFS= read -r entry; do
  name=${entry#*:}
  echo "--- $name: the last $lines lines of its output ($log)"
  # The block between "N/M Testing: name" and "<end of output>"; a test
  # listed twice (repeated runs) shows its last run.
  awk -v name="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); inside = ($0 == name); if (inside) n = 0; next }
    inside && /^<end of output>$/ { inside = 0; next }
    inside { block[n++] = $0 }
    END { for (i = (n > lines ? n - lines : 0); i < n; i++) print block[i] }
  ' lines="$lines" "$log"
done <"$failed"
