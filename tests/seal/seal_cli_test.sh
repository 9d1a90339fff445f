#!/usr/bin/env bash
# Sealing (URL option seal=) and `auditpipe verify` against a real database:
# rows loaded with `auditpipe ingest` into a sealed table, then tampered with
# through SQL in one way per case; verify must name it and exit non-zero.
#
#   seal_cli_test.sh <auditpipe binary> <sqlite|mysql|postgresql> <scratch dir> <case>
#
# Cases: clean, since (verify --since, and usage errors), values (awkward doubles verify clean; a boolean of 5 is
# caught), update, delete_row, delete_seal, insert, swap, truncate,
# forged_seal, unsealed, bad_key, killdb (mysql: the server killed -9 mid-load),
# two_writers (two processes sealing one table at once), wide_batch (a
# seal's keys and fingerprints past 64 KiB), seals_blocked (the seals table
# refuses inserts for a while), seals_slow (the seals table locked for a
# while: inserts wait).
# Exits 77 (skipped) when the database's server is not configured.
set -euo pipefail
. "$(cd "$(dirname "$0")/../support" && pwd)/sql_client.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1 backend=$2 work=$3 case=$4
rm -rf "$work"
mkdir -p "$work"
cd "$work"
table="sealed_${case}"

fail() { echo "FAIL [$backend/$case]: $*" >&2; exit 1; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }

sql_client "$backend" "$work/audit.db"
q "DROP TABLE IF EXISTS $table" >/dev/null
q "DROP TABLE IF EXISTS ${table}_seals" >/dev/null
q "DROP TABLE IF EXISTS ${table}_unsealed" >/dev/null
q "DELETE FROM auditpipe_ingest_checkpoints WHERE target_table = '$table'" >/dev/null 2>&1 || true

printf 'a key nobody else has' > key
chmod 600 key
sep='?'; [[ $url == *\?* ]] && sep='&'
sealed_url="${url}${sep}seal=hmac&seal_key_file=$work/key&seal_anchor_file=$work/anchor"

cat > schema.json <<JSON
{"table": "$table", "columns": [
  {"name": "at", "type": "timestamp"},
  {"name": "user_name", "type": "text", "size": 32, "path": "user.name"},
  {"name": "level", "type": "uint8"},
  {"name": "amount", "type": "float64", "nullable": true},
  {"name": "ok", "type": "boolean"},
  {"name": "msg", "type": "text", "size": 64, "nullable": true}
]}
JSON
# jsonl N FIRST: N lines numbered from FIRST (awkward floats, NULLs, non-ASCII text).
jsonl() {
  awk -v n="$1" -v first="${2:-0}" 'BEGIN { for (i = first; i < first + n; i++)
    printf "{\"at\":\"2026-11-30T12:%02d:%02d.%06dZ\",\"user\":{\"name\":\"user%d é\"},\"level\":%d,\"amount\":%s,\"ok\":%s,\"msg\":%s}\n",
      int(i / 60) % 60, i % 60, (i * 7919) % 1000000, i, i % 200, (i % 5 ? sprintf("%.17g", i / 3.0) : "null"),
      (i % 2 ? "true" : "false"), (i % 7 ? "\"message " i "\"" : "null") }'
}
# One writer unless a case says otherwise: then the seals follow the input's
# order, so the cases can tamper with seal N.
load() {
  local w=(--writers 1)
  [ "${writers+set}" = set ] && w=()
  "$bin" ingest --quiet --schema schema.json --batch-size "${batch:-500}" "${w[@]}" "$@"
}
verify() { "$bin" verify --quiet "$url" --table "$table" "$@"; }
run_verify_url() { set +e; out=$("$bin" verify --quiet "$1" --table "$table" 2>&1); rc=$?; set -e; echo "$out" >> verify.log; }
# run_verify ARGS...: sets out and rc.
run_verify() { set +e; out=$(verify "$@" 2>&1); rc=$?; set -e; echo "$out" >> verify.log; }
expect_found() {  # status pattern...
  local status=$1; shift
  [ "$rc" = "$status" ] || fail "verify exited $rc, expected $status: $out"
  for p in "$@"; do grep -qE -- "$p" <<<"$out" || fail "verify did not say /$p/: $out"; done
}
# key N: "source_id seq" of the Nth row in key order.
key() { q "SELECT source_id, seq FROM $table ORDER BY source_id, seq LIMIT 1 OFFSET $1" | tr '\t' ' '; }
# delete_seal_rows N: deletes the rows seal N covers ("sid:a-b,c;sid:...").
delete_seal_rows() {
  local part sid items cond item
  for part in $(q "SELECT ranges FROM ${table}_seals WHERE seal_no = $1" | tr ';' ' '); do
    sid=${part%%:*} items=${part#*:} cond=""
    for item in ${items//,/ }; do
      [ -n "$cond" ] && cond+=" OR "
      if [[ $item == *-* ]]; then cond+="seq BETWEEN ${item%-*} AND ${item#*-}"; else cond+="seq = $item"; fi
    done
    q "DELETE FROM $table WHERE source_id = $sid AND ($cond)" >/dev/null
  done
}

if [[ ! $case =~ ^(bad_key|killdb|forged_seal|two_writers|wide_batch|values)$ ]]; then
  jsonl 2000 0 > a.jsonl
  jsonl 1500 5000 > b.jsonl
  load "$sealed_url" a.jsonl b.jsonl || fail "load exited $?"
  expect_eq "$(q "SELECT COUNT(*) FROM $table")" 3500 "rows loaded"
  seals=$(q "SELECT COUNT(*) FROM ${table}_seals")
  [ "$seals" -ge 7 ] || fail "only $seals seals for 3500 rows in batches of 500"
  expect_eq "$(q "SELECT SUM(row_count) FROM ${table}_seals")" 3500 "rows sealed"
  run_verify --key-file key --anchor anchor
  expect_found 0 "3500 rows, $seals seals: verified"
fi

case $case in
  clean)
    # Also without the anchor, and --since (the newer seals only).
    run_verify --key-file key
    expect_found 0 "verified"
    # A copy on read-only media, checked by an account that may not write
    # beside it: SQLite wanted to make the WAL file's -shm there, and every
    # read failed (exit 4). (As root only the account can be another.)
    if [ "$backend" = sqlite ] && [ "$(id -u)" = 0 ] && command -v runuser >/dev/null &&
       id nobody >/dev/null 2>&1 && runuser -u nobody -- test -x "$bin"; then
      ro=$(mktemp -d /tmp/auditpipe-ro.XXXXXX)
      mkdir "$ro/media"
      q "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
      cp "$work/audit.db" "$ro/media/copy.db"
      cp key "$ro/key"
      chown nobody "$ro/key"
      chmod 400 "$ro/key"
      chmod 644 "$ro/media/copy.db"
      chmod 555 "$ro/media"
      chmod 755 "$ro"
      set +e
      out=$(cd / && runuser -u nobody -- "$bin" verify --quiet "sqlite://$ro/media/copy.db" --table "$table" --key-file "$ro/key" 2>&1)
      rc=$?
      set -e
      expect_found 0 "3500 rows, [0-9]+ seals: verified"
      [ "$(ls "$ro/media")" = copy.db ] || fail "verify left files beside the read-only copy: $(ls "$ro/media")"
      # A live database in a directory the checking account may not write:
      # a writer holds it open, with changes in its -wal. Read through its
      # -shm, not opened immutable (which would read pages the writer is
      # changing) nor refused for the -wal.
      chmod 755 "$ro/media"
      cp "$work/audit.db" "$ro/media/live.db"
      python3 - "$ro/media/live.db" "$ro/ready" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("CREATE TABLE beside (x)")
for i in range(200):
    c.execute("INSERT INTO beside VALUES (?)", (i,))
open(sys.argv[2], "w").close()
time.sleep(30)
PY
      writer=$!
      for _ in $(seq 1 100); do [ -e "$ro/ready" ] && break; sleep 0.1; done
      chmod 555 "$ro/media"
      set +e
      out=$(cd / && runuser -u nobody -- "$bin" verify --quiet "sqlite://$ro/media/live.db" --table "$table" --key-file "$ro/key" 2>&1)
      rc=$?
      set -e
      kill "$writer" 2>/dev/null || true
      wait "$writer" 2>/dev/null || true
      expect_found 0 "3500 rows, [0-9]+ seals: verified"
      chmod 755 "$ro/media"
      rm -rf "$ro"
    fi
    # An account without SELECT on the table: PostgreSQL's catalogue hides
    # the columns it may not read, and verify said "no table". It names the
    # grants. (The test account needs CREATEROLE, which scripts/postgres.sh
    # gives it; a server that does not give it skips this.)
    if [ "$backend" = postgresql ] && q "CREATE ROLE auditpipe_nogrant_$$ LOGIN PASSWORD 'nogrant-pw'" >/dev/null 2>&1; then
      nogrant_url=$(sed -E "s|//[^@/]*@|//auditpipe_nogrant_$$:nogrant-pw@|" <<<"$url")
      run_verify_url "$nogrant_url"
      q "DROP ROLE auditpipe_nogrant_$$" >/dev/null
      expect_found 4 "cannot read $table" "grant the verifying account SELECT on it, on ${table}_seals"
    fi
    # The URL reused without seal= (a new user's second host): its rows
    # would stay unsealed for good. Refused at open; nothing stored.
    jsonl 10 900000 > unsealed.jsonl
    set +e; out=$(load "$url" unsealed.jsonl 2>&1); rc=$?; set -e
    [ "$rc" != 0 ] && grep -q "is sealed (${table}_seals holds its seals), and this logger does not seal" <<<"$out" ||
      fail "a sealed table opened without seal=: exit $rc: $out"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 3500 "rows after the refused unsealed load"
    # Another key, or seal=hash, on the same table: every seal it made
    # failed verification for good. Refused at open, by the newest seal.
    printf 'another host, another key' > key3
    chmod 600 key3
    set +e; out=$(load "${url}${sep}seal=hmac&seal_key_file=$work/key3" unsealed.jsonl 2>&1); rc=$?; set -e
    [ "$rc" != 0 ] && grep -q "does not verify with this logger's seal=hmac key ($work/key3), though its rows are as it sealed them" <<<"$out" ||
      fail "a sealed table opened with another key: exit $rc: $out"
    grep -q "another host" <<<"$out" && fail "the key is in the message"
    set +e; out=$(load "${url}${sep}seal=hash" unsealed.jsonl 2>&1); rc=$?; set -e
    [ "$rc" != 0 ] && grep -q "does not verify with this logger's seal=hash (no key)" <<<"$out" ||
      fail "a seal=hmac table opened with seal=hash: exit $rc: $out"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 3500 "rows after the refused loads"
    run_verify --key-file key --since "$(date -u +%s -d '1 hour ago')"
    expect_found 0 "verified"
    # A key-sealed table checked without the key: every seal fails, and
    # verify says it could not verify (exit 4), naming no row as changed.
    run_verify
    expect_found 4 "give --key-file" "not verified: no seal's digest matches without a key"
    grep -q "^changed:" <<<"$out" && fail "a missing key reported as changed rows: $out"
    grep -q 'a key nobody' "$work"/anchor && fail "the key is in the anchor file"
    [ "$(q "SELECT COUNT(*) FROM ${table}_seals WHERE digest LIKE '%key%'")" = 0 ] ||
      fail "a digest holds the key"
    # The application's URL as it is: its key file and anchor file are used.
    run_verify_url "$sealed_url"
    expect_found 0 "3500 rows, [0-9]+ seals: verified"
    # The wrong key: every seal fails, and verify says the key is the likelier mistake.
    printf 'another key' > key2
    chmod 600 key2
    run_verify --key-file key2
    expect_found 4 "hint: no seal verifies, yet every row matches .*is --key-file the key"
    # The wrong key and a row deleted: tampering (exit 1), every seal named.
    q "DELETE FROM $table WHERE source_id = $(key 100 | cut -d' ' -f1) AND seq = $(key 100 | cut -d' ' -f2)" >/dev/null
    run_verify --key-file key2
    expect_found 1 "^deleted: 1 of " "^changed: rows of seal "
    # A seal's ranges rewritten into something no writer makes: named, exit 1.
    q "UPDATE ${table}_seals SET ranges = 'garbage' WHERE seal_no = 2"
    run_verify --key-file key --unsealed-window 0
    expect_found 1 "^seal 2: its ranges 'garbage' are malformed" "inserted: row"
    # verify only reads: on SQLite a mistyped path is not created, and a
    # file in rollback-journal mode is not switched to WAL.
    if [ "$backend" = sqlite ]; then
      run_verify_url "sqlite://$work/missing.db"
      expect_found 4 "no SQLite database '$work/missing.db'"
      [ ! -e "$work/missing.db" ] || fail "verify created the missing file"
      q "PRAGMA journal_mode=DELETE" >/dev/null
      run_verify --key-file key --unsealed-window 0
      expect_found 1 "^seal 2: its ranges 'garbage' are malformed"
      expect_eq "$(q 'PRAGMA journal_mode')" delete "the journal mode after verify"
      [ ! -e "$work/audit.db-wal" ] || fail "verify made a WAL file"
    fi
    # PostgreSQL stores the fingerprints as they are: compressing hex of
    # checksums was most of what sealing cost its server.
    if [ "$backend" = postgresql ]; then
      expect_eq "$(q "SELECT attstorage FROM pg_attribute WHERE attrelid = '${table}_seals'::regclass AND attname = 'row_hashes'")" e \
        "the storage of ${table}_seals.row_hashes"
    fi ;;
  update)
    read -r sid seq <<<"$(key 700)"
    q "UPDATE $table SET user_name = 'mallory' WHERE source_id = $sid AND seq = $seq"
    run_verify --key-file key --anchor anchor
    expect_found 1 "^changed: source_id $sid seq $seq of seal [0-9]+ \(" "1 tampering findings" ;;
  delete_row)
    read -r sid seq <<<"$(key 1200)"
    q "DELETE FROM $table WHERE source_id = $sid AND seq = $seq"
    run_verify --key-file key --anchor anchor
    expect_found 1 "deleted: 1 of [0-9]+ rows of seal [0-9]+ \(.*$sid:.*\) missing: source_id $sid seq $seq\$" ;;
  delete_seal)
    delete_seal_rows 3
    run_verify --key-file key --anchor anchor
    expect_found 1 "deleted: ([0-9]+) of \1 rows of seal 3 " ;;
  insert)
    # A forged row in a free key inside a seal's range (seq is a byte offset).
    read -r sid seq <<<"$(key 900)"
    q "INSERT INTO $table (at, user_name, level, amount, ok, msg, source_id, seq) SELECT at, 'forged', level, amount, ok, msg, source_id, seq + 1 FROM $table WHERE source_id = $sid AND seq = $seq"
    # And one below the first row of a source (seq 0 is its first line: a new source).
    q "INSERT INTO $table (at, user_name, level, amount, ok, msg, source_id, seq) SELECT at, 'forged', level, amount, ok, msg, source_id + 1, seq FROM $table WHERE source_id = $sid AND seq = $seq"
    # Near the tail (the last 16 seals) an uncovered row may be a crash's: "not yet sealed".
    run_verify --key-file key --anchor anchor
    expect_found 3 "not yet sealed: source_id $sid"
    # Writers stopped cleanly (--unsealed-window 0): every uncovered row is
    # inserted, also one of a source no seal names (before, it stayed "not
    # yet sealed", exit 3, however long it was there).
    run_verify --key-file key --anchor anchor --unsealed-window 0
    expect_found 1 "inserted: row \(source_id $sid, seq $((seq + 1))\) is covered by no seal" \
      "inserted: row \(source_id $((sid + 1)), seq $seq\) is covered by no seal" ;;
  swap)
    read -r sid1 seq1 <<<"$(key 100)"
    read -r sid2 seq2 <<<"$(key 2600)"
    v1=$(q "SELECT user_name FROM $table WHERE source_id = $sid1 AND seq = $seq1")
    v2=$(q "SELECT user_name FROM $table WHERE source_id = $sid2 AND seq = $seq2")
    q "UPDATE $table SET user_name = '$v2' WHERE source_id = $sid1 AND seq = $seq1"
    q "UPDATE $table SET user_name = '$v1' WHERE source_id = $sid2 AND seq = $seq2"
    run_verify --key-file key --anchor anchor
    expect_found 1 "^changed: source_id $sid1 seq $seq1 of seal [0-9]+ \(" \
      "^changed: source_id $sid2 seq $seq2 of seal [0-9]+ \(" "2 tampering findings" ;;
  truncate)
    last=$(q "SELECT MAX(seal_no) FROM ${table}_seals")
    delete_seal_rows "$last"
    delete_seal_rows "$((last - 1))"
    q "DELETE FROM ${table}_seals WHERE seal_no >= $((last - 1))"
    run_verify --key-file key
    expect_found 0 "verified"   # without an anchor nothing shows it
    run_verify --key-file key --anchor anchor
    expect_found 1 "truncated: the anchor names seal $last but the seals end at $((last - 2))"
    run_verify --key-file key --anchor "$(tr ' ' ':' < anchor)"
    expect_found 1 "truncated:"
    # An empty anchor (an unset variable) is no anchor: refused, not "verified".
    run_verify --key-file key --anchor ""
    expect_found 2 "--anchor: is empty"
    # Said in words (it was "not in range 0.000000 to 1797693134862315708...").
    run_verify --key-file key --accept-late 0
    expect_found 2 "--accept-late: a whole number from 1 up, not '0'"
    # A writer started with that anchor file refuses: its first seal would
    # rewrite the anchor, and verify --anchor then said "verified".
    cp anchor anchor.before
    set +e; restart=$(load "$sealed_url" a.jsonl b.jsonl 2>&1); restart_rc=$?; set -e
    [ "$restart_rc" = 1 ] || fail "a start behind its anchor: exit $restart_rc, expected 1: $restart"
    grep -q "the seal anchor file $work/anchor names seal $last, and $table .* has no seal $last (its seals end at $((last - 2)))" <<<"$restart" ||
      fail "the start did not say why: $restart"
    cmp -s anchor anchor.before || fail "the refused start rewrote the anchor"
    # Moved away, the next start seals on from the table as it is.
    mv anchor anchor.evidence
    load "$sealed_url" a.jsonl b.jsonl || fail "a start without the old anchor exited $?"
    # Another table's anchor (a digest this chain does not have) is refused too.
    printf '1 %064d\n' 0 > anchor
    set +e; restart=$(load "$sealed_url" a.jsonl b.jsonl 2>&1); restart_rc=$?; set -e
    [ "$restart_rc" = 1 ] && grep -q "names seal 1, and seal 1 of $table .* has another digest" <<<"$restart" ||
      fail "a rewritten chain: exit $restart_rc: $restart"
    rm anchor
    # A seal in the middle removed: its rows are inserted ones now.
    q "DELETE FROM ${table}_seals WHERE seal_no = 2"
    run_verify --key-file key --unsealed-window 0
    expect_found 1 "seals removed: seal_no 2 missing before seal 3" "chain broken at seal 3" "inserted: row"
    # The seals table dropped: cut off whole, which the anchor shows (it
    # was "could not verify", exit 4).
    q "DROP TABLE ${table}_seals"
    run_verify --key-file key --anchor anchor.evidence
    expect_found 1 "truncated: the anchor names seal $last but there is no seals table" ;;
  renumbered)
    # Seal numbers edited to the ends of BIGINT: named in words (a negative
    # first number read "seal_no -3-1"), and nothing after the largest
    # (adding 1 to it overflowed).
    last=$(q "SELECT MAX(seal_no) FROM ${table}_seals")
    q "UPDATE ${table}_seals SET seal_no = -4 WHERE seal_no = 1"
    q "UPDATE ${table}_seals SET seal_no = 9223372036854775807 WHERE seal_no = $last"
    run_verify --key-file key
    expect_found 1 "seals reordered: seal -4 out of order" \
      "seals removed: seal_no -3 to 1 missing before seal 2" \
      "seals removed: seal_no $last-9223372036854775806 missing before seal 9223372036854775807" ;;
  forged_seal)
    # Seals an attacker without the key can make: plain SHA-256 (seal=hash).
    jsonl 1200 0 > a.jsonl
    load "${url}${sep}seal=hash" a.jsonl || fail "load exited $?"
    run_verify
    expect_found 0 "verified"
    run_verify --key-file key
    expect_found 1 "forged seal: seal 1 .*recomputed without the key" ;;
  unsealed)
    # What a crash between the rows and their seal leaves: rows newer than the last seal.
    last=$(q "SELECT MAX(seal_no) FROM ${table}_seals")
    lost=$(q "SELECT row_count FROM ${table}_seals WHERE seal_no = $last")
    q "DELETE FROM ${table}_seals WHERE seal_no = $last"
    # A crash before the seal was stored never published it either.
    printf '%s %s\n' "$((last - 1))" "$(q "SELECT digest FROM ${table}_seals WHERE seal_no = $((last - 1))")" > anchor
    run_verify --key-file key
    expect_found 3 "not yet sealed: source_id" "some rows not yet sealed"
    # The next run says so at start and seals them late, in one seal marked
    # so: one line per source (a batch may hold both files' rows), counting
    # every row the deleted seal covered.
    load "$sealed_url" a.jsonl b.jsonl 2> rerun.err || fail "the rerun exited $?"
    warned=$(grep -oE "[0-9]+ rows of source_id [0-9]+ from seq [0-9]+ on are covered by no seal .*sealed then" rerun.err |
      awk '{ n += $1 } END { print n + 0 }')
    expect_eq "$warned" "$lost" "rows the rerun found unsealed ($(cat rerun.err))"
    grep -qE "auditpipe: $table .*: $lost rows found unsealed at start are sealed late" rerun.err ||
      fail "the rerun did not say it sealed them: $(cat rerun.err)"
    expect_eq "$(q "SELECT row_count FROM ${table}_seals WHERE seal_no = $last AND ranges LIKE 'late:%'")" "$lost" \
      "rows of the late seal $last"
    # verify names it until it is accepted; the anchor moved on with it.
    run_verify --key-file key --anchor anchor --unsealed-window 0
    expect_found 3 "^sealed late: seal $last \(late:[0-9]+:.*, $lost rows sealed at " "1 late seals to check"
    run_verify --key-file key --anchor anchor --unsealed-window 0 --accept-late "$last"
    expect_found 0 "3500 rows, $last seals: verified \(1 late seals accepted"
    # A row changed after its late seal is caught like any other.
    part=$(q "SELECT ranges FROM ${table}_seals WHERE seal_no = $last")
    part=${part#late:}; part=${part%%;*}
    sid=${part%%:*} seq=${part#*:}; seq=${seq%%[-,]*}
    q "UPDATE $table SET level = 201 WHERE source_id = $sid AND seq = $seq" >/dev/null
    run_verify --key-file key --accept-late "$last"
    expect_found 1 "changed: source_id $sid seq $seq of seal $last "
    # Rows and no seals at all (a run that stopped before its first seal).
    q "DELETE FROM ${table}_seals"
    rm anchor  # (a run that made no seal published none)
    load "$sealed_url" a.jsonl b.jsonl 2> rerun2.err || fail "the second rerun exited $?"
    grep -q "holds rows but no seals yet" rerun2.err || fail "no warning of a table without seals: $(cat rerun2.err)" ;;
  since)
    # --since: the seals made from TIME on are checked, the older ones'
    # rows trusted. More lines of a source sealed before (the same source_id,
    # later offsets) and a new source, after TIME.
    sleep 1.1
    t=$(date -u +%s)
    sleep 1.1
    old_seals=$(q "SELECT COUNT(*) FROM ${table}_seals")
    jsonl 700 2000 >> a.jsonl
    jsonl 300 9000 > c.jsonl
    load "$sealed_url" a.jsonl c.jsonl || fail "the second load exited $?"
    new_seals=$(( $(q "SELECT COUNT(*) FROM ${table}_seals") - old_seals ))
    [ "$new_seals" -ge 2 ] || fail "only $new_seals seals for the rows loaded after --since"
    run_verify --key-file key --anchor anchor --since "$t"
    expect_found 0 "^$table: [0-9]+ rows, $new_seals seals \($old_seals older trusted: --since\): verified\$"
    run_verify --key-file key --since "$(date -u +%Y-%m-%dT%H:%M:%S -d "@$t")"
    expect_found 0 "$new_seals seals \($old_seals older trusted"
    # A TIME after the newest seal: nothing to check, nothing unsealed.
    run_verify --key-file key --since "$(( $(date -u +%s) + 3600 ))"
    expect_found 0 ": 0 rows, 0 seals \([0-9]+ older trusted: --since\): verified\$"
    # ISO 8601 with its Z is TIME too; a date that does not exist is not.
    run_verify --key-file key --since "$(date -u +%Y-%m-%dT%H:%M:%SZ -d "@$t")"
    expect_found 0 "$new_seals seals \($old_seals older trusted"
    run_verify --key-file key --since 2026-02-31
    expect_found 2 "no such date"
    # Sealing options that contradict each other are named first, before
    # the anchor file (missing here) is read.
    run_verify_url "${url}${sep}seal_anchor_file=$work/no-such-anchor"
    expect_found 2 "seal_anchor_file is given but sealing is off"
    # The window's first seal deleted: its link to the last trusted seal
    # breaks. (Put back afterwards.)
    first=$((old_seals + 1))
    q "DROP TABLE IF EXISTS ${table}_kept" >/dev/null
    q "CREATE TABLE ${table}_kept AS SELECT * FROM ${table}_seals WHERE seal_no = $first"
    q "DELETE FROM ${table}_seals WHERE seal_no = $first"
    run_verify --key-file key --since "$t"
    expect_found 1 "seals removed: seal_no $first missing before seal $((first + 1))" "chain broken at seal $((first + 1))"
    q "INSERT INTO ${table}_seals SELECT * FROM ${table}_kept"
    q "DROP TABLE ${table}_kept"
    run_verify --key-file key --since "$t"
    expect_found 0 "verified"
    # A newer seal's sealed_at moved before TIME is found (it is part of
    # the digest; a seal after the window's first is checked whatever its
    # sealed_at says), and so is a row of a newer seal changed.
    last=$(q "SELECT MAX(seal_no) FROM ${table}_seals")
    q "UPDATE ${table}_seals SET sealed_at = 0 WHERE seal_no = $last"
    run_verify --key-file key --since "$t"
    expect_found 1 "^changed: rows of seal $last \(.*or the seal was rewritten" "1 tampering findings"
    read -r sid seq <<<"$(q "SELECT source_id, seq FROM $table WHERE user_name = 'user9100 é'" | tr '\t' ' ')"
    q "UPDATE $table SET level = level + 1 WHERE source_id = $sid AND seq = $seq"
    run_verify --key-file key --since "$t"
    expect_found 1 "^changed: source_id $sid seq $seq of seal [0-9]+ "
    # Malformed usage: exit 2, before anything is read.
    run_verify --key-file key --since "$(date -u +%Y-%m-%d)garbage"
    expect_found 2 "give epoch seconds"
    run_verify --key-file key --anchor "$work/no-such-anchor"
    expect_found 2 "cannot read it"
    set +e; out=$("$bin" verify --quiet "$url" --table "" 2>&1); rc=$?; set -e
    expect_found 2 "--table: is empty"
    # A negative count wrapped round (window -16 acted as 0), silently.
    run_verify --key-file key --unsealed-window=-16
    expect_found 2 "a count, not -16"
    # A URL at fault is a usage error too (not 4, "could not read"), said
    # about the URL as given.
    set +e
    out=$("$bin" verify "${url%%\?*}?no_such_option=1" --table $table 2>&1); rc=$?
    set -e
    expect_found 2 "unknown option 'no_such_option'"
    grep -q "read_only=1" <<<"$out" && fail "the message shows an option the user did not give: $out"
    true ;;
  values)
    # Values a database gives back in another form: -0.0 (SQLite and
    # MariaDB store 0), doubles whose 17-digit text is not exact (SQLite's
    # printf above 1e100), the extremes. The table verifies clean.
    jsonl 300 0 > a.jsonl
    i=300
    for amount in -0.0 0.0 1.7976931348623157e308 -1.1782508561682684e+213 4.9406564584124654e-324 \
                  2.2250738585072014e-308 1e300 -1e-300 0.1 123456789.123456789; do
      printf '{"at":"2026-11-30T12:00:00.000001Z","user":{"name":"v%d"},"level":1,"amount":%s,"ok":true,"msg":null}\n' \
        "$i" "$amount" >> a.jsonl
      i=$((i + 1))
    done
    load "$sealed_url" a.jsonl || fail "load exited $?"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 310 "rows loaded"
    run_verify --key-file key --anchor anchor
    expect_found 0 "310 rows, [0-9]+ seals: verified"
    # A boolean the column holds but the record cannot: MySQL's BOOLEAN is
    # a TINYINT(1) (-128..127), SQLite's an INTEGER; a 5 is not the 1 sealed.
    if [ "$backend" != postgresql ]; then
      read -r sid seq <<<"$(q "SELECT source_id, seq FROM $table WHERE ok = 1 ORDER BY seq LIMIT 1" | tr '\t' ' ')"
      q "UPDATE $table SET ok = 5 WHERE source_id = $sid AND seq = $seq"
      run_verify --key-file key --anchor anchor
      expect_found 1 "^changed: source_id $sid seq $seq of seal [0-9]+ \(" "1 tampering findings"
    else
      # Timestamps no writer stores: the read-back failed the whole query
      # (bigint out of range, "cannot convert infinity"), exit 4, and every
      # other finding went unsaid. Now each is a changed row.
      read -r sid seq <<<"$(q "SELECT source_id, seq FROM $table ORDER BY seq LIMIT 1 OFFSET 10" | tr '\t' ' ')"
      read -r sid2 seq2 <<<"$(q "SELECT source_id, seq FROM $table ORDER BY seq LIMIT 1 OFFSET 20" | tr '\t' ' ')"
      q "UPDATE $table SET at = 'infinity' WHERE source_id = $sid AND seq = $seq"
      q "UPDATE $table SET at = '294276-12-31 00:00:00+00' WHERE source_id = $sid2 AND seq = $seq2"
      run_verify --key-file key --anchor anchor
      expect_found 1 "^changed: source_id $sid seq $seq, source_id $sid2 seq $seq2 of seal [0-9]+ \("
    fi
    # A seal's own count rewritten: not "inserted" rows that do not exist.
    q "UPDATE ${table}_seals SET row_count = row_count - 1 WHERE seal_no = 1"
    run_verify --key-file key --anchor anchor
    expect_found 1 "^rewritten seal: seal 1 .* says 309 rows, but its ranges hold 310"
    if [ "$backend" = sqlite ]; then
      # A value of no integer in SQLite's untyped column: a finding, not exit 4.
      q "UPDATE ${table}_seals SET sealed_at = 'x' WHERE seal_no = 1"
      run_verify --key-file key --anchor anchor
      expect_found 1 "^rewritten seal: seal 1's sealed_at 'x' is not a number"
    fi ;;
  bad_key)
    jsonl 10 0 > a.jsonl
    chmod 644 key
    set +e; out=$(load "$sealed_url" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] || fail "a world-readable key: exit $rc, expected 2 (before connecting): $out"
    grep -q "readable by everyone" <<<"$out" || fail "no reason given: $out"
    grep -q 'a key nobody' <<<"$out" && fail "the key is in the message"
    : > key
    chmod 600 key
    set +e; out=$(load "${url}${sep}seal=hmac&seal_key_file=$work/key" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "is empty" <<<"$out" || fail "an empty key: $rc $out"
    printf 'k' > key
    set +e; out=$(load "${url}${sep}seal=hmac&seal_key_file=$work/key" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "holds 1 bytes; a sealing key needs at least 16" <<<"$out" || fail "a 1-byte key: $rc $out"
    set +e; out=$(env -u AUDITPIPE_SEAL_KEY_FILE "$bin" ingest --quiet --schema schema.json "${url}${sep}seal=hmac" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "needs a key file" <<<"$out" || fail "no key: $rc $out"
    # Sealing options that would be ignored, or an anchor nobody can write: refused at open
    # (the first two, and migrate= with seal= below, by the URL alone: exit 2, usage).
    chmod 600 key
    printf 'a key nobody else has' > key
    set +e; out=$(load "${url}${sep}seal=hash&seal_key_file=$work/key" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "seal_key_file is for seal=hmac" <<<"$out" || fail "a key with seal=hash: $rc $out"
    set +e; out=$(load "${url}${sep}seal_anchor_file=$work/anchor" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "seal_anchor_file is given but sealing is off" <<<"$out" || fail "an anchor without seal=: $rc $out"
    set +e; out=$(load "${url}${sep}seal=hmac&seal_key_file=$work/key&seal_anchor_file=$work/no/such/dir/anchor" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "cannot write beside it (No such file or directory)" <<<"$out" || fail "an unwritable anchor: $rc $out"
    mkdir -p anchor_dir
    set +e; out=$(load "${url}${sep}seal=hmac&seal_key_file=$work/key&seal_anchor_file=$work/anchor_dir" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "is a directory" <<<"$out" || fail "an anchor that is a directory: $rc $out"
    # Refused before connecting: no table made, no dead-letter file left.
    q "SELECT COUNT(*) FROM $table" >/dev/null 2>&1 && fail "a refused load made table $table"
    ls ./*.refused >/dev/null 2>&1 && fail "a refused load left $(ls ./*.refused)"
    # A table whose columns are the record's in another order (made by a
    # run with another schema): sealing it is refused, since its seals
    # would not verify; so is migrate=add_columns with seal=.
    sed 's/"columns": \[/"columns": [ {"name": "level", "type": "uint8"},/; /"name": "level"/{/"columns"/!d}' schema.json > reordered.json
    "$bin" ingest --quiet --schema reordered.json --writers 1 "$url" a.jsonl || fail "the unsealed load exited $?"
    set +e; out=$(load "$sealed_url" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" != 0 ] && grep -q "has the columns (level, at, user_name, amount, ok, msg), not exactly the record's in its order (at, user_name, level, amount, ok, msg)" <<<"$out" ||
      fail "a reordered table was sealed: $rc $out"
    # That start failed after the pipeline made its dead-letter file: removed, being empty.
    ls ./*.refused >/dev/null 2>&1 && fail "a failed start left $(ls ./*.refused)"
    set +e; out=$(load "${sealed_url}&migrate=add_columns" a.jsonl 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] && grep -q "migrate=add_columns and seal= together are refused" <<<"$out" || fail "migrate with seal: $rc $out" ;;
  killdb)
    # The server killed -9 mid-load, started again; the load finishes on a
    # rerun. Every row is sealed, or reported as not yet sealed; none tampered.
    [ "$backend" = mysql ] || { echo "killdb runs against MariaDB only"; exit 77; }
    jsonl 400000 0 > a.jsonl
    writers= batch=2000 load "$sealed_url" a.jsonl &
    pid=$!
    for _ in $(seq 100); do  # until the load is under way
      n=$(q "SELECT COUNT(*) FROM $table" 2>/dev/null || echo 0)
      [ "${n:-0}" -gt 20000 ] && break
      sleep 0.1
    done
    (cd "$here" && ./scripts/mariadb.sh kill) >/dev/null
    kill -0 $pid 2>/dev/null || fail "the load ended before the kill"
    sleep 1
    (cd "$here" && ./scripts/mariadb.sh start) >/dev/null
    stored=$(q "SELECT COUNT(*) FROM $table")
    echo "killed with $n rows stored; $stored after the restart"
    wait $pid || true
    writers= batch=2000 load "$sealed_url" a.jsonl || fail "the rerun exited $?"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 400000 "rows after the rerun"
    run_verify --key-file key
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "verify after kill -9 exited $rc: $out"
    grep -qE "^(changed|deleted|inserted|seals|chain|forged)" <<<"$out" && fail "tampering reported: $out"
    echo "$out" ;;
  two_writers)
    # Two processes seal one table at once (two hosts of one service): each
    # continues the chain the table holds, and the whole verifies. The first
    # follows its log: half of it is stored and sealed, the second loads all
    # of its own, then the first gets the rest, so that its next seal meets
    # the second's (left to timing, a busy machine let them miss).
    jsonl 15000 0 > a.jsonl
    head -n 7500 a.jsonl > a.log
    jsonl 15000 100000 > b.jsonl
    sealed() { q "SELECT COALESCE(SUM(row_count), 0) FROM ${table}_seals" 2>/dev/null || echo 0; }
    until_sealed() {
      for _ in $(seq 1 300); do [ "$(sealed)" -ge "$1" ] && return 0; sleep 0.1; done
      fail "waited for $1 rows sealed, have $(sealed): $(cat a.err)"
    }
    # The command itself in the background (not load's subshell), so that
    # the signal below reaches it.
    # (Not --quiet: the note that the loads met is an info line, which -q leaves out.)
    "$bin" ingest --schema schema.json --batch-size 100 --follow "$sealed_url" a.log 2> a.err &
    pid=$!
    trap 'kill $pid 2>/dev/null || true' EXIT  # a failure below leaves no follower behind
    until_sealed 7500
    writers= batch=100 load "${url}${sep}seal=hmac&seal_key_file=$work/key" b.jsonl 2> b.err || fail "load b exited $?"
    tail -n +7501 a.jsonl >> a.log
    until_sealed 30000
    kill -TERM $pid
    wait $pid || fail "load a exited $?: $(cat a.err)"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 30000 "rows loaded"
    expect_eq "$(q "SELECT SUM(row_count) FROM ${table}_seals")" 30000 "rows sealed"
    grep -q "another process also seals" a.err b.err || fail "the loads never met: $(cat a.err b.err)"
    run_verify --key-file key --unsealed-window 0
    expect_found 0 "30000 rows, [0-9]+ seals: verified" ;;
  wide_batch)
    # 20000 rows of byte-offset seqs in one batch: the seal's ranges and
    # fingerprints are over 64 KiB each (MySQL's TEXT holds no more).
    jsonl 20000 0 > a.jsonl
    batch=20000 load "$sealed_url" a.jsonl || fail "load exited $?"
    [ "$(q "SELECT MAX(LENGTH(ranges)) FROM ${table}_seals")" -gt 65536 ] || fail "ranges under 64 KiB"
    run_verify --key-file key --anchor anchor --unsealed-window 0
    expect_found 0 "20000 rows, [0-9]+ seals: verified" ;;
  seals_blocked)
    # The seals table refuses inserts (a trigger): at most 64 seals' batches
    # are stored unsealed, the rest wait; once it takes them again the load
    # finishes and everything verifies.
    case $backend in
      sqlite) q "CREATE TRIGGER block_seals BEFORE INSERT ON ${table}_seals BEGIN SELECT RAISE(ABORT, 'seals blocked'); END" ;;
      mysql) q "CREATE TRIGGER block_seals BEFORE INSERT ON ${table}_seals FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'seals blocked'" ;;
      postgresql) q "CREATE OR REPLACE FUNCTION block_seals() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RAISE EXCEPTION 'seals blocked'; END \$\$"
        q "CREATE TRIGGER block_seals BEFORE INSERT ON ${table}_seals FOR EACH ROW EXECUTE FUNCTION block_seals()" ;;
    esac
    jsonl 40000 10000 > c.jsonl
    writers= batch=100 load "$sealed_url" c.jsonl 2> c.err &
    pid=$!
    sleep 4
    kill -0 $pid 2>/dev/null || fail "the load ended while its seals were refused: $(cat c.err)"
    held=$(q "SELECT COUNT(*) FROM $table")
    # 64 pending seals' batches, plus one batch per writer in flight.
    [ "$held" -le $((3500 + 66 * 100)) ] || fail "$held rows stored while seals were refused"
    [ "$held" -gt 3500 ] || fail "nothing stored before the seals were refused"
    case $backend in
      postgresql) q "DROP TRIGGER block_seals ON ${table}_seals" ;;
      *) q "DROP TRIGGER block_seals" ;;
    esac
    wait $pid || fail "the load exited $? after the seals were taken again: $(tail -5 c.err)"
    expect_eq "$(q "SELECT COUNT(*) FROM $table")" 43500 "rows loaded"
    # Each batch held meanwhile got a seal of its own, in order.
    [ "$(q "SELECT MAX(row_count) FROM ${table}_seals WHERE seal_no > 7")" -le 100 ] || fail "a seal covers more than one batch"
    [ "$(q "SELECT COUNT(*) FROM ${table}_seals")" -ge $((7 + 400)) ] || fail "fewer seals than batches"
    run_verify --key-file key --anchor anchor --unsealed-window 0
    expect_found 0 "43500 rows, [0-9]+ seals: verified" ;;
  seals_slow)
    # The seals table is locked while a load with one writer follows its
    # log: a seal's insert waits for the lock. The writer's batches must go
    # on meanwhile (the seals' own thread waits, on a connection of its
    # own); once the lock goes, everything is sealed and verifies.
    [ "$backend" = sqlite ] && { echo "one connection: the SQLite writer stores its seals itself"; exit 77; }
    rows() { q "SELECT COUNT(*) FROM $table"; }
    jsonl 6000 10000 > c.jsonl
    head -n 1000 c.jsonl > c.log
    "$bin" ingest --quiet --schema schema.json --batch-size 100 --writers 1 --follow "$sealed_url" c.log 2> c.err &
    pid=$!
    trap 'kill $pid 2>/dev/null || true' EXIT
    for _ in $(seq 300); do [ "$(rows)" -ge 4500 ] && break; sleep 0.1; done
    expect_eq "$(rows)" 4500 "rows before the lock"
    case $backend in
      mysql) q "LOCK TABLES ${table}_seals WRITE; SELECT SLEEP(8); UNLOCK TABLES" > lock.out 2>&1 & ;;
      postgresql) q "BEGIN; LOCK TABLE ${table}_seals IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(8); COMMIT" > lock.out 2>&1 & ;;
    esac
    lock=$!
    sleep 1  # the lock is held from here on
    # 50 batches: fewer than the 64 seals that may wait.
    tail -n +1001 c.jsonl >> c.log
    for _ in $(seq 40); do [ "$(rows)" -ge 9500 ] && break; sleep 0.1; done
    during=$(rows)
    kill -0 $lock 2>/dev/null || fail "the lock ended before the rows were counted: $(cat lock.out)"
    # Had the writer stored the seal itself, it would wait with it: a batch at most.
    expect_eq "$during" 9500 "rows stored while a seal waited for the lock"
    wait $lock || fail "the lock's session failed: $(cat lock.out)"
    sealed=0
    for _ in $(seq 100); do
      sealed=$(q "SELECT SUM(row_count) FROM ${table}_seals")
      [ "$sealed" -ge 9500 ] && break
      sleep 0.1
    done
    expect_eq "$sealed" 9500 "rows sealed after the lock"
    kill -TERM $pid
    wait $pid || fail "the load exited $?: $(cat c.err)"
    run_verify --key-file key --anchor anchor --unsealed-window 0
    expect_found 0 "9500 rows, [0-9]+ seals: verified" ;;
  *) fail "unknown case $case" ;;
esac
echo "ok [$backend/$case]"
