#!/bin/bash
# vrun.sh BIN LABEL: sealed ingest of 1M rows into MariaDB, then verify on one core twice
source /tmp/myenv.sh >/dev/null
bin=$1; label=$2
url="$AUDITPIPE_TEST_MYSQL_URL"
my() { mariadb -u auditpipe -pauditpipe-test -h 127.0.0.1 -P 33506 auditpipe_test -N -e "$1"; }
my "DROP TABLE IF EXISTS bench_ingest; DROP TABLE IF EXISTS bench_ingest_seals; DROP TABLE IF EXISTS bench_ingest_unsealed; DROP TABLE IF EXISTS auditpipe_ingest_checkpoints"
t0=$(date +%s.%N)
$bin ingest --quiet --schema /tmp/vb/schema.json --reject-file /tmp/vb/rej.jsonl "$url?seal=hmac&seal_key_file=/tmp/vb/seal.key" /tmp/vb/rows.jsonl; rc=$?
t1=$(date +%s.%N)
echo "$label ingest sealed rc=$rc $(echo "1000000/($t1-$t0)" | bc) rows/s"
for i in 1 2 3; do
  t0=$(date +%s.%N)
  taskset -c 0 $bin verify --quiet "$url" --table bench_ingest --key-file /tmp/vb/seal.key; rc=$?
  t1=$(date +%s.%N)
  echo "$label verify rc=$rc $(echo "1000000/($t1-$t0)" | bc) rows/s"
done
