#!/usr/bin/env bash
# `auditpipe ingest` against what a user would run instead, in one run, on
# the same generated audit rows (~400 bytes each): into MariaDB (LOAD DATA
# LOCAL INFILE through the mariadb client, mariadb-import --local), into
# PostgreSQL (psql \copy) and into SQLite (sqlite3 .import); from JSONL,
# JSONL.zst and CSV; plus bench/ingest's library pipeline on the same server
# for the library's own rate. Prints one table row per load: rows/s, the
# ratio to the baseline, client and server CPU seconds, the client's peak
# RSS; the time a rerun of a completed load takes; the JSONL loads again
# with seal=hmac, and `auditpipe verify` of the sealed table on one core.
#
#   bench/ingest_tool.sh BUILD_DIR RESULTS_DIR [ROWS]   # default 2,000,000 rows
#
# Needs the servers scripts/mariadb.sh and scripts/postgres.sh start
# (AUDITPIPE_MARIADB_DIR, AUDITPIPE_POSTGRES_DIR set as for them); bench/run.sh
# calls it that way.
set -euo pipefail
build=$1 results=$2 rows=${3:-2000000}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/cli/auditpipe
work=$(mktemp -d /tmp/auditpipe-ingest-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$results"
out=$results/ingest_tool.txt
: > "$out"

mysql_url=$("$here/scripts/mariadb.sh" url)
postgres_url=$("$here/scripts/postgres.sh" url)
re='^mysql://([^:]+):([^@]*)@([^:/]+):([0-9]+)/(.+)$'
[[ $mysql_url =~ $re ]]
my_user=${BASH_REMATCH[1]} my_pw=${BASH_REMATCH[2]} my_host=${BASH_REMATCH[3]}
my_port=${BASH_REMATCH[4]} my_db=${BASH_REMATCH[5]}
my() { MYSQL_PWD=$my_pw mariadb --local-infile=1 -u "$my_user" -h "$my_host" -P "$my_port" -N -B "$my_db" "$@"; }
pg() { psql "$postgres_url" -X -q -At "$@"; }

# --- data --------------------------------------------------------------------
echo "generating $rows rows" >&2
awk -v n="$rows" -v dir="$work" 'BEGIN {
  srand(42)
  split("login logout read write delete grant revoke export", actions, " ")
  print "at,tenant,user_id,user_name,action,resource,ip,status,latency_ms,ok,detail,source_id,seq" > (dir "/rows.csv")
  for (i = 0; i < n; i++) {
    at = sprintf("2026-11-%02dT%02d:%02d:%02d.%06dZ", 1 + int(i / 86400) % 28, int(i / 3600) % 24, int(i / 60) % 60, i % 60, i % 1000000)
    tenant = i % 97; uid = 100000 + i % 50000; name = "user" uid
    action = actions[1 + i % 8]
    resource = sprintf("/api/v2/tenants/%d/projects/%d/documents/%d/revisions/%d", tenant, i % 1000, i, i % 7)
    ip = sprintf("10.%d.%d.%d", i % 256, int(i / 256) % 256, int(i / 65536) % 256)
    status = (i % 50 == 0) ? 403 : 200; lat = (i % 1000) / 7.0; ok = (status == 200) ? "true" : "false"
    detail = sprintf("request %d from %s via gateway-%d; session %08x; user agent Mozilla/5.0 (X11; Linux x86_64) audit-client/%d.%d", i, ip, i % 16, i * 2654435761 % 4294967296, i % 9, i % 13)
    printf "{\"at\":\"%s\",\"tenant\":%d,\"user\":{\"id\":%d,\"name\":\"%s\"},\"action\":\"%s\",\"resource\":\"%s\",\"ip\":\"%s\",\"status\":%d,\"latency_ms\":%.3f,\"ok\":%s,\"detail\":\"%s\"}\n", at, tenant, uid, name, action, resource, ip, status, lat, ok, detail > (dir "/rows.jsonl")
    printf "%s,%d,%d,%s,%s,%s,%s,%d,%.3f,%d,\"%s\",1,%d\n", substr(at, 1, 10) " " substr(at, 12, 15), tenant, uid, name, action, resource, ip, status, lat, (ok == "true"), detail, i > (dir "/rows.csv")
  }
}'
zstd -q -T2 -3 "$work/rows.jsonl" -o "$work/rows.jsonl.zst"
echo "jsonl $(du -h "$work/rows.jsonl" | cut -f1), zst $(du -h "$work/rows.jsonl.zst" | cut -f1), csv $(du -h "$work/rows.csv" | cut -f1)" | tee -a "$out" >&2

cat > "$work/schema.json" <<JSON
{"table": "bench_ingest", "columns": [
  {"name": "at", "type": "timestamp"},
  {"name": "tenant", "type": "int32"},
  {"name": "user_id", "type": "int64", "path": "user.id"},
  {"name": "user_name", "type": "text", "size": 32, "path": "user.name"},
  {"name": "action", "type": "text", "size": 16},
  {"name": "resource", "type": "text", "size": 96},
  {"name": "ip", "type": "text", "size": 40},
  {"name": "status", "type": "int16"},
  {"name": "latency_ms", "type": "float64"},
  {"name": "ok", "type": "boolean"},
  {"name": "detail", "type": "text", "size": 192}
]}
JSON
cols="at,tenant,user_id,user_name,action,resource,ip,status,latency_ms,ok,detail,source_id,seq"

# --- measuring -----------------------------------------------------------------
mariadb_pid=$(cat "$AUDITPIPE_MARIADB_DIR/mysqld.pid")
postmaster_pid=$(head -1 "$AUDITPIPE_POSTGRES_DIR/data/postmaster.pid")
tick=$(getconf CLK_TCK)
# Server CPU seconds so far: mariadbd's own; PostgreSQL's postmaster with
# its exited children (each client's backend), read after the client left.
server_cpu() {
  case $1 in
    mysql) awk -v t="$tick" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$mariadb_pid/stat" ;;
    postgresql) sleep 0.3; awk -v t="$tick" '{ printf "%.2f", ($14 + $15 + $16 + $17) / t }' "/proc/$postmaster_pid/stat" ;;
    sqlite) echo 0 ;;
  esac
}
# measure NAME DB ROWS_QUERY COMMAND...: runs it, prints a table row.
printf '%-34s %12s %10s %9s %9s %9s %7s\n' load rows rows/s vs_base client_s server_s rss_MB | tee -a "$out"
declare -A rate
measure() {
  local name=$1 db=$2 base=$3
  shift 3
  local s0 t0 t1 s1 u s m
  s0=$(server_cpu "$db")
  t0=$(date +%s.%N)
  /usr/bin/time -o "$work/time" -f '%U %S %M' "$@" >/dev/null 2>"$work/err" ||
    { echo "$name failed: $(tail -5 "$work/err")" >&2; return 1; }
  t1=$(date +%s.%N)
  s1=$(server_cpu "$db")
  read -r u s m < <(tail -1 "$work/time")
  local secs r
  secs=$(echo "$t1 - $t0" | bc -l)
  r=$(echo "$rows / $secs" | bc -l)
  rate[$name]=$r
  local vs="-"
  [ -n "$base" ] && vs=$(printf '%.2f' "$(echo "$r / ${rate[$base]}" | bc -l)")
  printf '%-34s %12d %10.0f %9s %9.2f %9.2f %7.0f\n' "$name" "$rows" "$r" "$vs" \
    "$(echo "$u + $s" | bc -l)" "$(echo "$s1 - $s0" | bc -l)" "$(echo "$m / 1024" | bc -l)" | tee -a "$out"
}

fresh_mysql() { my -e "DROP TABLE IF EXISTS bench_ingest; DROP TABLE IF EXISTS auditpipe_ingest_checkpoints"; }
fresh_pg() { pg -c "DROP TABLE IF EXISTS bench_ingest; DROP TABLE IF EXISTS auditpipe_ingest_checkpoints"; }
mysql_table() {
  my -e "DROP TABLE IF EXISTS bench_ingest; CREATE TABLE bench_ingest (at DATETIME(6) NOT NULL, tenant INT NOT NULL, user_id BIGINT NOT NULL, user_name VARCHAR(32) NOT NULL, action VARCHAR(16) NOT NULL, resource VARCHAR(96) NOT NULL, ip VARCHAR(40) NOT NULL, status SMALLINT NOT NULL, latency_ms DOUBLE NOT NULL, ok BOOLEAN NOT NULL, detail VARCHAR(192) NOT NULL, source_id BIGINT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (source_id, seq)) ENGINE=InnoDB"
}
tool=("$bin" ingest --quiet --schema "$work/schema.json" --reject-file "$work/rejects.jsonl")
ingest() { "${tool[@]}" "$@"; }

# --- MariaDB -------------------------------------------------------------------
echo "=== MariaDB" >&2
mysql_table
measure "mariadb LOAD DATA LOCAL (csv)" mysql "" \
  env MYSQL_PWD="$my_pw" mariadb --local-infile=1 -u "$my_user" -h "$my_host" -P "$my_port" "$my_db" \
  -e "LOAD DATA LOCAL INFILE '$work/rows.csv' INTO TABLE bench_ingest FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES ($cols)"
mysql_table
cp "$work/rows.csv" "$work/bench_ingest.csv"
import_threads=$(mariadb-import --help 2>/dev/null | grep -q -- '--parallel' && echo --parallel=2 || echo --use-threads=2)
measure "mariadb-import --local $import_threads" mysql "mariadb LOAD DATA LOCAL (csv)" \
  env MYSQL_PWD="$my_pw" mariadb-import --local "$import_threads" -u "$my_user" -h "$my_host" -P "$my_port" \
  --fields-terminated-by=, --fields-optionally-enclosed-by='"' --ignore-lines=1 --columns="$cols" "$my_db" "$work/bench_ingest.csv"
fresh_mysql
measure "auditpipe ingest mariadb (jsonl)" mysql "mariadb LOAD DATA LOCAL (csv)" "${tool[@]}" "$mysql_url" "$work/rows.jsonl"
t0=$(date +%s.%N); ingest "$mysql_url" "$work/rows.jsonl"; t1=$(date +%s.%N)
echo "rerun of the completed mariadb load: $(printf '%.2f' "$(echo "$t1 - $t0" | bc -l)") s" | tee -a "$out"
# Sealing (README, Tamper-evident tables): the same load with seal=hmac, and
# `auditpipe verify` of it on one core (taskset: the server has the other).
printf 'bench/ingest_tool seal key' > "$work/seal.key"
chmod 600 "$work/seal.key"
sealed() { echo "$1$( [[ $1 == *\?* ]] && echo '&' || echo '?')seal=hmac&seal_key_file=$work/seal.key"; }
# sealed_pair DB LABEL URL SQL_FUNCTION: the sealed load, then verify of it.
sealed_pair() {
  local db=$1 label=$2 url=$3 sql=$4
  "$sql" "DROP TABLE IF EXISTS bench_ingest_seals"
  "$sql" "DROP TABLE IF EXISTS bench_ingest_unsealed"
  measure "auditpipe ingest $label (jsonl, seal=hmac)" "$db" "auditpipe ingest $label (jsonl)" \
    "${tool[@]}" "$(sealed "$url")" "$work/rows.jsonl"
  measure "auditpipe verify $label (1 core)" "$db" "" \
    taskset -c 0 "$bin" verify --quiet "$url" --table bench_ingest --key-file "$work/seal.key"
  "$sql" "DROP TABLE IF EXISTS bench_ingest_seals"
  "$sql" "DROP TABLE IF EXISTS bench_ingest_unsealed"
}
my_sql() { my -e "$1"; }
pg_sql() { pg -c "$1"; }
fresh_mysql
sealed_pair mysql mariadb "$mysql_url" my_sql
fresh_mysql
measure "auditpipe ingest mariadb (jsonl.zst)" mysql "auditpipe ingest mariadb (jsonl)" "${tool[@]}" "$mysql_url" "$work/rows.jsonl.zst"
fresh_mysql
measure "auditpipe ingest mariadb (csv)" mysql "mariadb LOAD DATA LOCAL (csv)" "${tool[@]}" "$mysql_url" "$work/rows.csv"
# Peak RSS against input size: a 10 MB input and a 2 GB one (the rows three
# times over: other offsets, so other keys), the same command.
head -c 10000000 "$work/rows.jsonl" | head -n -1 > "$work/small.jsonl"
for _ in 1 2 3; do cat "$work/rows.jsonl"; done > "$work/large.jsonl"
for f in small large; do
  fresh_mysql
  /usr/bin/time -o "$work/time" -f '%M' "${tool[@]}" "$mysql_url" "$work/$f.jsonl" 2>/dev/null
  echo "peak RSS, $(du -h "$work/$f.jsonl" | cut -f1) input: $(( $(tail -1 "$work/time") / 1024 )) MB" | tee -a "$out"
done
rm -f "$work/large.jsonl"
fresh_mysql
echo "bench/ingest (the library's pipeline, its own rows):" | tee -a "$out"
"$build/bench/ingest" "$mysql_url" "$work/ingest-lib" "$(( rows / 1000000 > 0 ? rows / 1000000 : 1 ))" auditpipe 2>/dev/null | tee -a "$out" || true

# --- PostgreSQL ------------------------------------------------------------------
echo "=== PostgreSQL" >&2
pg -c "DROP TABLE IF EXISTS bench_ingest; CREATE TABLE bench_ingest (at timestamptz NOT NULL, tenant integer NOT NULL, user_id bigint NOT NULL, user_name varchar(32) NOT NULL, action varchar(16) NOT NULL, resource varchar(96) NOT NULL, ip varchar(40) NOT NULL, status smallint NOT NULL, latency_ms double precision NOT NULL, ok boolean NOT NULL, detail varchar(192) NOT NULL, source_id bigint NOT NULL, seq bigint NOT NULL, PRIMARY KEY (source_id, seq))"
measure "psql \\copy (csv)" postgresql "" \
  psql "$postgres_url" -X -q -c "\\copy bench_ingest($cols) FROM '$work/rows.csv' WITH (FORMAT csv, HEADER true)"
fresh_pg
measure "auditpipe ingest postgresql (jsonl)" postgresql "psql \\copy (csv)" "${tool[@]}" "$postgres_url" "$work/rows.jsonl"
fresh_pg
sealed_pair postgresql postgresql "$postgres_url" pg_sql
fresh_pg
measure "auditpipe ingest postgresql (csv)" postgresql "psql \\copy (csv)" "${tool[@]}" "$postgres_url" "$work/rows.csv"
fresh_pg

# --- SQLite ------------------------------------------------------------------------
echo "=== SQLite" >&2
db=$work/bench.db
rm -f "$db"
sqlite3 "$db" "CREATE TABLE bench_ingest (at TEXT, tenant INTEGER, user_id INTEGER, user_name TEXT, action TEXT, resource TEXT, ip TEXT, status INTEGER, latency_ms REAL, ok INTEGER, detail TEXT, source_id INTEGER, seq INTEGER, PRIMARY KEY (source_id, seq))"
measure "sqlite3 .import (csv)" sqlite "" sqlite3 "$db" ".import --csv --skip 1 $work/rows.csv bench_ingest"
rm -f "$db" "$db"-wal "$db"-shm
measure "auditpipe ingest sqlite (jsonl)" sqlite "sqlite3 .import (csv)" "${tool[@]}" "sqlite://$db" "$work/rows.jsonl"
echo "results in $out" >&2
