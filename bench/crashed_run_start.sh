#!/usr/bin/env bash
# What a sealed table's start costs after a crashed run whose producers left
# rows and no seal among the seals a start reads (a crash while their seals
# were held up), on a seals table of a million older seals. For each N: the
# example message platform logs 100 rows (one producer, seal=hash) into a
# fresh message_audit; 1,000,000 synthetic older seals go below its own;
# N more sources of that run get 10 rows and no seal, its own source 10
# unsealed rows; then a start that logs one record is timed. Prints the
# start's wall time per N and how many sources it warned of (N + 1). The
# time at N = 0 is the start's fixed part (its 5 s wait before it seals
# late); what the search for the N sources costs is the difference.
#
#   bench/crashed_run_start.sh BUILD_DIR [N...]     # default N: 0 2 20 60
#
# Needs the MariaDB of scripts/mariadb.sh (AUDITPIPE_MARIADB_DIR set as for
# it); drops and rewrites message_audit* there.
set -euo pipefail
build=$1
shift
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(0 2 20 60)
here=$(cd "$(dirname "$0")/.." && pwd)
platform=$build/examples/message_platform
url=$("$here/scripts/mariadb.sh" url)
re='^mysql://([^:]+):([^@]*)@([^:/]+):([0-9]+)/(.+)$'
[[ $url =~ $re ]]
my() {
  MYSQL_PWD=${BASH_REMATCH[2]} mariadb -u "${BASH_REMATCH[1]}" -h "${BASH_REMATCH[3]}" \
    -P "${BASH_REMATCH[4]}" -N -B "${BASH_REMATCH[5]}" -e "$1"
}
work=$(mktemp -d /tmp/auditpipe-crashed-start.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The older seals: two sources each, none of them the run's.
my "DROP TABLE IF EXISTS older_seals; CREATE TABLE older_seals (seal_no BIGINT NOT NULL PRIMARY KEY,
    ranges LONGTEXT NOT NULL, row_count BIGINT NOT NULL, prev_digest VARCHAR(64) NOT NULL,
    digest VARCHAR(64) NOT NULL, sealed_at BIGINT NOT NULL, row_hashes LONGTEXT NOT NULL);
  INSERT INTO older_seals SELECT seq, CONCAT((seq DIV 1000) * 65536 + seq MOD 7, ':', seq * 500,
    '-', seq * 500 + 499, ';', (seq DIV 1000) * 65536 + 7 + seq MOD 5, ':', seq * 500, '-',
    seq * 500 + 499), 1000, REPEAT('a', 64), REPEAT('b', 64), 0, REPEAT('c', 80)
  FROM seq_1_to_1000000"

columns="at, message_id, conversation_id, sender, receiver, status, latency_us, worker, payload"
printf '%-8s %-14s %s\n' sources "start (ms)" "sources warned of"
for n in "${counts[@]}"; do
  my "DROP TABLE IF EXISTS message_audit, message_audit_seals, message_audit_unsealed"
  "$platform" --threads 1 --messages 100 --batch 10 --url "$url?seal=hash" >/dev/null 2>&1
  base=$(my "SELECT MIN(source_id) FROM message_audit")
  # Below the run's own (numbered down from 0): renumbering the run's seals
  # instead would change their digests, and a start refuses a table whose
  # newest seal its rows no longer verify under.
  my "INSERT INTO message_audit_seals SELECT seal_no - 1000001, ranges, row_count, prev_digest,
      digest, sealed_at, row_hashes FROM older_seals"
  for k in $(seq 1 "$n"); do
    my "INSERT INTO message_audit ($columns, source_id, seq) SELECT $columns, $base + $k, seq
        FROM message_audit WHERE source_id = $base AND seq < 10"
  done
  my "INSERT INTO message_audit ($columns, source_id, seq) SELECT $columns, source_id, seq + 1000
      FROM message_audit WHERE source_id = $base AND seq < 10"
  start=$(date +%s%N)
  "$platform" --threads 1 --messages 1 --batch 10 --url "$url?seal=hash" >"$work/start.log" 2>&1
  end=$(date +%s%N)
  printf '%-8s %-14s %s\n' "$n" $(((end - start) / 1000000)) \
    "$(grep -c 'covered by no seal' "$work/start.log" || true)"
done
my "DROP TABLE IF EXISTS older_seals, message_audit, message_audit_seals, message_audit_unsealed"
