#!/usr/bin/env bash
# A throwaway MariaDB server for the tests and benchmarks: its own data
# directory, loopback port and socket; never the system service.
#
#   scripts/mariadb.sh start    # init (first time) and start; prints nothing on success
#   scripts/mariadb.sh stop     # shut down (the data directory stays)
#   scripts/mariadb.sh kill     # kill -9, as a crash would
#   scripts/mariadb.sh destroy  # stop and remove the data directory
#   scripts/mariadb.sh url      # the test user's URL
#
# The server speaks TLS with a private CA ($dir/tls/ca.pem) and listens on
# a unix socket ($dir/mysqld.sock) as well as on the port.
#
# Environment: AUDITPIPE_MARIADB_DIR (default build/mariadb),
# AUDITPIPE_MARIADB_PORT (default 23306).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${AUDITPIPE_MARIADB_DIR:-$PWD/build/mariadb}
port=${AUDITPIPE_MARIADB_PORT:-23306}
socket=$dir/mysqld.sock
pidfile=$dir/mysqld.pid
user=auditpipe
password=auditpipe-test
database=auditpipe_test

as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--user=root)

client() { mariadb --no-defaults --socket="$socket" -uroot "$@"; }

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
  if running; then return 0; fi
  mkdir -p "$dir"
  local fresh=0
  if [ ! -d "$dir/data/mysql" ]; then
    fresh=1
    mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
      --skip-test-db "${as_root[@]}" >"$dir/install.log" 2>&1 ||
      { cat "$dir/install.log" >&2; exit 1; }
  fi
  if [ ! -f "$dir/tls/server-cert.pem" ]; then
    # A private CA and a server certificate for 127.0.0.1, so the TLS
    # options can be tested against a server that really speaks TLS.
    mkdir -p "$dir/tls"
    (
      cd "$dir/tls"
      openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=auditpipe test CA" \
        -keyout ca-key.pem -out ca.pem
      openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server-key.pem \
        -out server-req.pem
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
      openssl x509 -req -in server-req.pem -days 3650 -CA ca.pem -CAkey ca-key.pem \
        -CAcreateserial -extfile san.ext -out server-cert.pem
    ) >"$dir/tls.log" 2>&1 || { cat "$dir/tls.log" >&2; exit 1; }
  fi
  mariadbd --no-defaults --datadir="$dir/data" --socket="$socket" --port="$port" \
    --bind-address=127.0.0.1 --pid-file="$pidfile" --log-error="$dir/error.log" \
    --ssl-ca="$dir/tls/ca.pem" --ssl-cert="$dir/tls/server-cert.pem" \
    --ssl-key="$dir/tls/server-key.pem" \
    --local-infile=1 --skip-log-bin --max-connections=500 --innodb-buffer-pool-size=512M \
    "${as_root[@]}" >/dev/null 2>&1 &
  for _ in $(seq 1 150); do
    if client -e "SELECT 1" >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  if ! client -e "SELECT 1" >/dev/null 2>&1; then
    echo "mariadb: the server did not start; its log:" >&2
    tail -20 "$dir/error.log" >&2
    exit 1
  fi
  if [ $fresh -eq 1 ]; then
    client <<SQL
CREATE DATABASE IF NOT EXISTS $database CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$user'@'127.0.0.1' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$password';
GRANT ALL ON \`${database}%\`.* TO '$user'@'127.0.0.1', '$user'@'localhost';
SQL
  fi
}

stop() {
  if running; then
    client -e "SHUTDOWN" >/dev/null 2>&1 || kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 150); do running || break; sleep 0.2; done
    running && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  fi
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  kill) running && kill -9 "$(cat "$pidfile")" && for _ in $(seq 1 50); do running || break; sleep 0.1; done ;;
  destroy) stop; rm -rf "$dir" ;;
  url) echo "mysql://$user:$password@127.0.0.1:$port/$database" ;;
  *) echo "usage: $0 start|stop|kill|destroy|url" >&2; exit 2 ;;
esac
