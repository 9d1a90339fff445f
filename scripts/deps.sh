#!/usr/bin/env bash
# Installs the Debian packages auditpipe builds and tests with, if any are
# missing. Idempotent: with everything present it changes nothing and needs
# no network. Run as root (or with sudo available).
#
#   scripts/deps.sh          # build + test dependencies
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libconcurrentqueue-dev   # the lock-free queue between producers and writers
  libspdlog-dev            # diagnostics
  libcpp-httplib-dev       # auditpipe::metrics_http, the /metrics HTTP server
  libsoci-dev libsqlite3-dev sqlite3
  libboost-dev             # Debian's SOCI headers include Boost (SOCI_HAVE_BOOST)
  libmariadb-dev           # MariaDB Connector/C: the libmysqlclient API of the MySQL sink
  mariadb-server mariadb-client  # the throwaway server the tests start (scripts/mariadb.sh)
  libpq-dev postgresql     # PostgreSQL through SOCI; the tests' throwaway server (scripts/postgres.sh)
                           # and primary + standby (scripts/postgres-standby.sh)
  galera-4                 # the Galera provider of the cluster tests' 3-node cluster (scripts/galera.sh)
  rsync                    # its state transfers (wsrep_sst_method=rsync; mariadb-backup is not needed)
  iproute2                 # ss: wsrep_sst_rsync checks its port with it
  procps                   # pgrep: the cluster scripts find what they started
  libgtest-dev libbenchmark-dev
  clang libclang-rt-14-dev # libFuzzer for the fuzz targets (clang's sanitizer runtimes)
  openssl                  # the test server's TLS certificates
  prometheus               # promtool: checks the shipped alerting rules and the metrics page
  jq                       # a real JSON reader for the dead-letter file's test
  libsimdjson-dev          # auditpipe ingest: parses JSON lines and schema files
  zlib1g-dev               # auditpipe ingest: reads gzip-compressed input
  libzstd-dev              # auditpipe ingest: reads zstd-compressed input
  gzip zstd                # the ingest input tests compress their files with the real tools
  dpkg-dev file lintian    # the Debian packages: cpack's dpkg-shlibdeps, and their check
  doxygen                  # the API reference (target docs), checked by the test api_docs
  libcli11-dev             # the auditpipe command's option parser
  help2man                 # its manual page, made from its --help
  libssl-dev               # libcrypto's SHA-256: auditpipe ingest's input identities
  tmux                     # a real terminal for the progress display's test
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  run=()
elif command -v sudo >/dev/null 2>&1; then
  run=(sudo)
else
  echo "deps: missing packages (${missing[*]}); run this script as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update -qq
"${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
