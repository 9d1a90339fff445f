# The database a command-line test script runs against, and its SQL client
# (sourced by tests/ingest/ingest_cli_test.sh and tests/seal/seal_cli_test.sh):
#
#   sql_client <sqlite|mysql|postgresql> <SQLite file>
#
# sets `url` (the SQLite file, or AUDITPIPE_TEST_MYSQL_URL /
# AUDITPIPE_TEST_POSTGRES_URL) and defines `q SQL`: one statement through
# the database's own client, rows one per line, values tab-separated. Exits
# 77 (skipped) when the backend's server is not configured.
sql_client() {
  case $1 in
    sqlite)
      url="sqlite://$2"
      sql_client_file=$2
      q() { sqlite3 -separator $'\t' "$sql_client_file" "$1"; } ;;
    mysql)
      [ -n "${AUDITPIPE_TEST_MYSQL_URL:-}" ] || { echo "no AUDITPIPE_TEST_MYSQL_URL"; exit 77; }
      url=$AUDITPIPE_TEST_MYSQL_URL
      local re='^mysql://([^:]+):([^@]*)@([^:/]+):([0-9]+)/(.+)$'
      [[ $url =~ $re ]] || { echo "cannot read $url" >&2; exit 1; }
      # Kept: BASH_REMATCH is overwritten by the script's next =~.
      sql_client_parts=("${BASH_REMATCH[@]}")
      q() {
        MYSQL_PWD=${sql_client_parts[2]} mariadb -u "${sql_client_parts[1]}" \
          --default-character-set=utf8mb4 -h "${sql_client_parts[3]}" -P "${sql_client_parts[4]}" \
          -N -B "${sql_client_parts[5]}" -e "$1"
      } ;;
    postgresql)
      [ -n "${AUDITPIPE_TEST_POSTGRES_URL:-}" ] || { echo "no AUDITPIPE_TEST_POSTGRES_URL"; exit 77; }
      url=$AUDITPIPE_TEST_POSTGRES_URL
      q() { psql "$url" -X -q -At -F $'\t' -c "$1"; } ;;
    *) echo "unknown backend $1" >&2; exit 1 ;;
  esac
}
