#!/usr/bin/env bash
# A throwaway 3-node MariaDB Galera cluster for the cluster tests: three
# mariadbd on 127.0.0.1, each with its own data directory, client port,
# socket and gcomm/IST/SST ports; never the system service.
#
#   scripts/galera.sh start         # init (first time) and start all three; waits until synced
#   scripts/galera.sh stop          # clean shutdown of all (3, 2, 1: node 1 may bootstrap next)
#   scripts/galera.sh stop-node N   # clean shutdown of node N (it leaves the cluster)
#   scripts/galera.sh kill N        # kill -9 of node N, as a crash would
#   scripts/galera.sh start-node N  # (re)start node N; it rejoins (IST, or SST by rsync)
#   scripts/galera.sh pause N       # SIGSTOP node N (a hung server: its peers evict it)
#   scripts/galera.sh resume N      # SIGCONT node N
#   scripts/galera.sh destroy       # stop everything and remove the directory
#   scripts/galera.sh url           # the test user's URL, all three nodes as a host list
#   scripts/galera.sh url N         # node N alone
#   scripts/galera.sh status        # per node: process, wsrep state, cluster size, primary
#
# Node 1 is bootstrapped (--wsrep-new-cluster) when no node runs; the others
# join it. After all nodes went down, start bootstraps the node Galera says
# is safe (grastate.dat safe_to_bootstrap: 1, the last one to leave
# cleanly); when none is (all crashed), the node with the highest seqno
# (grastate.dat, or mariadbd --wsrep-recover when it reads -1), which is
# marked safe_to_bootstrap first. A node killed while the others run just
# rejoins with start-node.
#
# As root, the servers run as the `mysql` user the Debian package creates
# (not as root like scripts/mariadb.sh's: the rsync daemon of a state
# transfer started by root drops to `nobody` and cannot write the data
# directory), so the directory is theirs.
#
# Same test user, password and database as scripts/mariadb.sh, created on the
# first node and replicated; TLS with a private CA ($dir/tls/ca.pem) for the
# clients (replication itself is plain, on loopback). Small buffer pools and
# gcache: the three together fit next to the tests on a small machine.
# Failure detection is shortened (evs.suspect_timeout 3 s, inactive 6 s), so a
# killed or paused node leaves the view within seconds.
#
# Environment: AUDITPIPE_GALERA_DIR (default build/galera),
# AUDITPIPE_GALERA_PORT_BASE (default 24306: node N's client port is base+N-1),
# AUDITPIPE_GALERA_GCOMM_PORT_BASE (default 24567: node N's gcomm port is
# base+N-1, its IST port base+10+N-1, its rsync SST port base+20+N-1).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${AUDITPIPE_GALERA_DIR:-$PWD/build/galera}
port_base=${AUDITPIPE_GALERA_PORT_BASE:-24306}
gcomm_base=${AUDITPIPE_GALERA_GCOMM_PORT_BASE:-24567}
provider=/usr/lib/galera/libgalera_smm.so  # Debian's galera-4
nodes=(1 2 3)
user=auditpipe
password=auditpipe-test
database=auditpipe_test

[ -f "$provider" ] || { echo "galera: $provider missing (package galera-4)" >&2; exit 1; }

node_dir() { echo "$dir/node$1"; }
client_port() { echo $((port_base + $1 - 1)); }
gcomm_port() { echo $((gcomm_base + $1 - 1)); }
ist_port() { echo $((gcomm_base + 10 + $1 - 1)); }
sst_port() { echo $((gcomm_base + 20 + $1 - 1)); }

client() {  # client N args...: root over node N's socket, bounded in time
  local n=$1
  shift
  timeout 10 mariadb --no-defaults --socket="$(node_dir "$n")/mysqld.sock" -uroot \
    --connect-timeout=3 "$@"
}

# The pid this script started node N with ($nd/launched.pid: mariadbd
# writes its own pid file only once it has joined a primary component).
pid_of() { cat "$(node_dir "$1")/launched.pid" 2>/dev/null || true; }

# Node N's mariadbd is alive: the process this script started, and it is
# still ours (its command line names this node's config), not a recycled pid.
running() {
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$(node_dir "$1")/my.cnf"
}

paused() {
  running "$1" && [ "$(awk '/^State:/ {print $2}' "/proc/$(pid_of "$1")/status")" = T ]
}

# Node N runs but has left the cluster for good: after a pause (SIGSTOP,
# or a host stalled that long) its group communication may fail to form a
# view again and give up ("exception from gcomm, backend must be
# restarted"), leaving mariadbd running, Disconnected, never to rejoin by
# itself. Only the log lines since this script launched it count.
gave_up() {
  local nd from
  running "$1" && ! paused "$1" || return 1
  nd=$(node_dir "$1")
  from=$(cat "$nd/launched.logline" 2>/dev/null || echo 0)
  tail -n +"$((from + 1))" "$nd/error.log" 2>/dev/null | grep -q 'backend must be restarted' &&
    [ "$(wsrep "$1" wsrep_cluster_status)" != Primary ]
}

# restart_given_up N: a node that gave_up is stopped, to be launched again.
restart_given_up() {
  gave_up "$1" || return 1
  echo "galera: node $1 left the cluster (its gcomm gave up after a stall): restarting it" >&2
  stop_node "$1"
}

check_node() {
  case "${1:-}" in 1 | 2 | 3) ;; *) echo "galera: a node number (1, 2 or 3) expected" >&2; exit 2 ;; esac
}

wsrep() {  # wsrep N variable: one wsrep status value of node N (empty when it does not answer)
  client "$1" -N -B -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}' || true
}

tls() {
  [ -f "$dir/tls/server-cert.pem" ] && return 0
  # A private CA and one server certificate for 127.0.0.1, shared by the
  # three nodes (as scripts/mariadb.sh makes its own).
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
}

# Node N's own option file: mariadbd and the SST scripts it runs read only
# this (--defaults-file), never /etc/mysql.
config() {
  local n=$1 nd
  nd=$(node_dir "$n")
  mkdir -p "$nd/data"
  local peers="" m
  for m in "${nodes[@]}"; do peers+="${peers:+,}127.0.0.1:$(gcomm_port "$m")"; done
  cat >"$nd/my.cnf" <<EOF
# scripts/galera.sh: node $n of the throwaway test cluster (regenerated at each start)
[mysqld]
$([ "$(id -u)" -eq 0 ] && echo "user = mysql")
datadir = $nd/data
socket = $nd/mysqld.sock
pid-file = $nd/mysqld.pid
log-error = $nd/error.log
port = $(client_port "$n")
bind-address = 127.0.0.1
ssl-ca = $dir/tls/ca.pem
ssl-cert = $dir/tls/server-cert.pem
ssl-key = $dir/tls/server-key.pem
local-infile = 1
skip-log-bin
max-connections = 200
character-set-server = utf8mb4
performance-schema = OFF
innodb-buffer-pool-size = 64M
innodb-log-file-size = 16M
innodb-log-buffer-size = 4M
key-buffer-size = 1M
# What Galera requires: row events, interleaved auto-increment locks.
binlog-format = ROW
default-storage-engine = InnoDB
innodb-autoinc-lock-mode = 2
wsrep-on = ON
wsrep-provider = $provider
wsrep-cluster-name = auditpipe_test
wsrep-cluster-address = gcomm://$peers
wsrep-node-name = node$n
wsrep-node-address = 127.0.0.1:$(gcomm_port "$n")
wsrep-node-incoming-address = 127.0.0.1:$(client_port "$n")
wsrep-sst-method = rsync
wsrep-sst-receive-address = 127.0.0.1:$(sst_port "$n")
wsrep-slave-threads = 1
wsrep-provider-options = "gmcast.listen_addr=tcp://127.0.0.1:$(gcomm_port "$n");ist.recv_addr=127.0.0.1:$(ist_port "$n");gcache.size=32M;gcache.page_size=32M;evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
[sst]
# The state transfer is plain rsync on loopback: the clients' TLS settings
# above would otherwise make it require stunnel.
ssl-mode = DISABLED
EOF
}

# wait_synced N size [seconds]: until node N is ready, Synced (state 4) and
# sees a cluster of `size` nodes.
# With stopped_returns=1, a node that stops returns 2 instead of exiting.
stopped_returns=0
wait_synced() {
  local n=$1 size=$2 limit=${3:-180} i
  for ((i = 0; i < limit * 5; i++)); do
    restart_given_up "$n" || true
    if ! running "$n"; then
      echo "galera: node $n stopped while starting; its log:" >&2
      tail -30 "$(node_dir "$n")/error.log" >&2
      [ "$stopped_returns" = 1 ] && return 2
      exit 1
    fi
    local out
    out=$(client "$n" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN \
      ('wsrep_ready','wsrep_local_state','wsrep_cluster_size')" 2>/dev/null || true)
    if [ "$(awk '$1=="wsrep_ready" {print $2}' <<<"$out")" = ON ] &&
       [ "$(awk '$1=="wsrep_local_state" {print $2}' <<<"$out")" = 4 ] &&
       [ "$(awk '$1=="wsrep_cluster_size" {print $2}' <<<"$out")" = "$size" ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "galera: node $n not synced in a cluster of $size after ${limit}s; its log:" >&2
  tail -30 "$(node_dir "$n")/error.log" >&2
  exit 1
}

count_running() {
  local c=0 m
  for m in "${nodes[@]}"; do running "$m" && c=$((c + 1)); done
  echo "$c"
}

# recovered_position N: node N's last committed position (uuid:seqno) from
# its InnoDB logs, as mysqld_safe's and systemd's galera_recovery find it:
# after a crash grastate.dat reads seqno -1.
recovered_position() {
  local nd
  nd=$(node_dir "$1")
  config "$1"
  mariadbd --defaults-file="$nd/my.cnf" --wsrep-recover --log-error="$nd/recover.log" \
    >/dev/null 2>&1 || true
  sed -n 's/.*WSREP: Recovered position: \([0-9a-f-]*:-\?[0-9]*\).*/\1/p' "$nd/recover.log" | tail -1
}

crashed() {  # node N went down without a clean shutdown (its position is unknown)
  local g
  g="$(node_dir "$1")/data/grastate.dat"
  [ -f "$g" ] && [ -d "$(node_dir "$1")/data/mysql" ] &&
    [ "$(awk '/^seqno:/ {print $2}' "$g")" = -1 ]
}

# join N [--wsrep-new-cluster]: launch node N and wait until it is synced
# with the nodes running (synced_or_relaunched).
join() {
  launch "$@"
  synced_or_relaunched "$@"
}

# synced_or_relaunched N [launch args]: wait until the launched node N is
# synced with the nodes running; one that stops while starting is launched
# again, twice at most: Galera's gcomm thread sometimes ends before the
# provider reads its scheduling parameters ("failed to open gcomm backend
# connection: 3: Failed to read thread schedparams ... No such process"),
# at the first start as at a restart after a crash.
synced_or_relaunched() {
  local n=$1 attempt rc
  for attempt in 1 2 3; do
    rc=0
    stopped_returns=$([ $attempt -lt 3 ] && echo 1 || echo 0)
    # The node just launched counts whether or not it is seen running yet:
    # in the moment between fork and exec its command line is the shell's.
    # (Counted with the others and then looked at again, it could be missed
    # by the count and seen by the second look: 180 s waiting for a cluster
    # of 2 that had 3, in CI.)
    local size=1 m
    for m in "${nodes[@]}"; do
      [ "$m" != "$n" ] && running "$m" && size=$((size + 1))
    done
    wait_synced "$n" "$size" || rc=$?
    stopped_returns=0
    [ $rc -eq 0 ] && return 0
    echo "galera: launching node $n again (attempt $((attempt + 1)) of 3)" >&2
    launch "$@"
  done
}

launch() {  # launch N [--wsrep-new-cluster]
  local n=$1 nd start_at=()
  shift
  nd=$(node_dir "$n")
  # After a crash, the node starts from what InnoDB committed, so that it
  # asks its donor for the missing writesets only (IST), not a full SST.
  if crashed "$n"; then
    local position
    position=$(recovered_position "$n")
    [ -n "$position" ] && start_at=(--wsrep-start-position="$position")
  fi
  config "$n"
  if [ -f "$nd/error.log" ]; then wc -l <"$nd/error.log"; else echo 0; fi >"$nd/launched.logline"
  mariadbd --defaults-file="$nd/my.cnf" "${start_at[@]}" "$@" >>"$nd/console.log" 2>&1 &
  echo $! >"$nd/launched.pid"
}

# The node to bootstrap when none runs: node 1 on a fresh cluster; else the
# one marked safe_to_bootstrap, else the highest seqno (recovered from InnoDB
# when grastate.dat reads -1, as after kill -9), which is then marked safe.
bootstrap_node() {
  local m nd best="" best_seqno=-2 safe=""
  for m in "${nodes[@]}"; do
    nd=$(node_dir "$m")
    [ -f "$nd/data/grastate.dat" ] || continue
    if grep -q '^safe_to_bootstrap: *1' "$nd/data/grastate.dat"; then safe=$m; break; fi
    local seqno
    seqno=$(awk '/^seqno:/ {print $2}' "$nd/data/grastate.dat")
    if [ "${seqno:--1}" = -1 ]; then
      seqno=$(recovered_position "$m")
      seqno=${seqno##*:}
      seqno=${seqno:--1}
    fi
    if [ "$seqno" -gt "$best_seqno" ]; then best=$m; best_seqno=$seqno; fi
  done
  if [ -n "$safe" ]; then echo "$safe"; return; fi
  if [ -z "$best" ]; then echo 1; return; fi
  sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$(node_dir "$best")/data/grastate.dat"
  echo "galera: all nodes had crashed; bootstrapping node $best (seqno $best_seqno)" >&2
  echo "$best"
}

start() {
  local m
  mkdir -p "$dir"
  tls
  for m in "${nodes[@]}"; do config "$m"; done
  [ "$(id -u)" -eq 0 ] && chown -R mysql: "$dir"
  for m in "${nodes[@]}"; do paused "$m" && kill -CONT "$(pid_of "$m")"; done
  for m in "${nodes[@]}"; do restart_given_up "$m" || true; done
  if [ "$(count_running)" -eq 0 ]; then
    local first fresh=0
    [ -d "$(node_dir 1)/data/mysql" ] || [ -f "$(node_dir 1)/data/grastate.dat" ] || fresh=1
    if [ $fresh -eq 1 ]; then
      first=1
      config 1
      mariadb-install-db --defaults-file="$(node_dir 1)/my.cnf" --auth-root-authentication-method=normal \
        --skip-test-db --wsrep-on=OFF >"$dir/install.log" 2>&1 ||
        { cat "$dir/install.log" >&2; exit 1; }
    else
      first=$(bootstrap_node)
    fi
    join "$first" --wsrep-new-cluster
    if [ $fresh -eq 1 ]; then
      client "$first" <<SQL
CREATE DATABASE IF NOT EXISTS $database CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$user'@'127.0.0.1' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$password';
GRANT ALL ON \`${database}%\`.* TO '$user'@'127.0.0.1', '$user'@'localhost';
SQL
    fi
  fi
  if primary; then
    # The others join one at a time (one donor, one state transfer at a time).
    for m in "${nodes[@]}"; do
      running "$m" && continue
      join "$m"
    done
  else
    # The nodes that run lost their primary component (the others were
    # killed): the missing ones come back all at once, with the identities
    # they saved (gvwstate.dat, pc.recovery), and the component of the last
    # primary view is primary again.
    for m in "${nodes[@]}"; do running "$m" || launch "$m"; done
  fi
  for m in "${nodes[@]}"; do synced_or_relaunched "$m"; done
}

primary() {  # some node runs in a primary component
  local m
  for m in "${nodes[@]}"; do
    running "$m" && ! paused "$m" && [ "$(wsrep "$m" wsrep_cluster_status)" = Primary ] && return 0
  done
  return 1
}

start_node() {
  local n=$1
  if [ "$(count_running)" -eq 0 ]; then
    echo "galera: no node runs: use start (it bootstraps the cluster)" >&2
    exit 1
  fi
  if paused "$n"; then kill -CONT "$(pid_of "$n")"; fi
  if primary; then
    running "$n" || launch "$n"
    synced_or_relaunched "$n"
  else
    # No primary component to join: the node waits for its peers (start
    # brings them all back).
    running "$n" || launch "$n"
    echo "galera: no primary component: node $n waits for its peers (scripts/galera.sh start)" >&2
  fi
}

stop_node() {
  local n=$1 pid
  running "$n" || return 0
  pid=$(pid_of "$n")
  paused "$n" && kill -CONT "$pid"
  client "$n" -e "SHUTDOWN" >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do running "$n" || break; sleep 0.2; done
  if running "$n"; then kill -9 "$pid" 2>/dev/null || true; fi
  for _ in $(seq 1 50); do running "$n" || break; sleep 0.1; done
}

kill_node() {
  local n=$1 pid
  running "$n" || return 0
  pid=$(pid_of "$n")
  kill -9 "$pid"
  for _ in $(seq 1 50); do running "$n" || break; sleep 0.1; done
}

stop() {
  local m
  for m in 3 2 1; do stop_node "$m"; done
  # State transfers in flight (wsrep_sst_rsync and its rsync daemon) name
  # this directory: none may outlive the servers.
  leftovers TERM
  return 0
}

leftovers() {  # leftovers SIGNAL: signal the processes whose command line names $dir
  local pid
  for pid in $(pgrep -f -- "$dir/" || true); do
    [ "$pid" = $$ ] || kill "-$1" "$pid" 2>/dev/null || true
  done
}

status() {
  local m
  for m in "${nodes[@]}"; do
    if ! running "$m"; then
      echo "node $m: down (port $(client_port "$m"))"
    elif paused "$m"; then
      echo "node $m: paused (pid $(pid_of "$m"), port $(client_port "$m"))"
    else
      local out
      out=$(client "$m" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', \
        'wsrep_local_state','wsrep_local_state_comment','wsrep_cluster_size', \
        'wsrep_cluster_status')" 2>/dev/null || true)
      get() { awk -v k="$1" '$1==k {print $2}' <<<"$out"; }
      if [ -z "$out" ]; then
        echo "node $m: running (pid $(pid_of "$m"), port $(client_port "$m")): not answering" \
          "(joining, in a state transfer, or waiting for its peers)"
        continue
      fi
      echo "node $m: running (pid $(pid_of "$m"), port $(client_port "$m")):" \
        "state $(get wsrep_local_state) ($(get wsrep_local_state_comment)), cluster size" \
        "$(get wsrep_cluster_size), $(get wsrep_cluster_status), ready $(get wsrep_ready)"
    fi
  done
}

url() {
  if [ -n "${1:-}" ]; then
    check_node "$1"
    echo "mysql://$user:$password@127.0.0.1:$(client_port "$1")/$database"
  else
    local hosts="" m
    for m in "${nodes[@]}"; do hosts+="${hosts:+,}127.0.0.1:$(client_port "$m")"; done
    echo "mysql://$user:$password@$hosts/$database"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  stop-node) check_node "${2:-}"; stop_node "$2" ;;
  start-node) check_node "${2:-}"; start_node "$2" ;;
  kill) check_node "${2:-}"; kill_node "$2" ;;
  pause | resume)
    check_node "${2:-}"
    running "$2" || { echo "galera: node $2 does not run" >&2; exit 1; }
    if [ "$1" = pause ]; then kill -STOP "$(pid_of "$2")"; else kill -CONT "$(pid_of "$2")"; fi
    ;;
  destroy)
    stop
    leftovers KILL
    rm -rf "$dir"
    ;;
  gave-up) check_node "${2:-}"; gave_up "$2" ;;
  url) url "${2:-}" ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|stop-node N|kill N|start-node N|pause N|resume N|gave-up N|destroy|url [N]|status" >&2
    exit 2
    ;;
esac
