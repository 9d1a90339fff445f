#include "database.h"

#include <auditpipe/sink/url.h>
#include <sqlite3.h>

#ifdef MESSAGE_PLATFORM_HAS_MYSQL
#include <mysql.h>
#endif
#ifdef MESSAGE_PLATFORM_HAS_POSTGRESQL
#include <libpq-fe.h>
#endif

namespace platform {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

RowCount count_sqlite_rows(const std::string& url, const std::string& table,
                           const std::string& of_run) {
  RowCount count;
  std::string path = url.substr(std::string("sqlite://").size());
  path = auditpipe::percent_decode(path.substr(0, path.find('?')));
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return count;  // no file yet: no rows
  }
  auto scalar = [&](const std::string& sql) -> std::int64_t {
    sqlite3_stmt* st = nullptr;
    std::int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
  };
  count.rows = scalar("SELECT COUNT(*) FROM \"" + table + "\" WHERE " + of_run);
  count.distinct_keys = scalar("SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM \"" +
                               table + "\" WHERE " + of_run + ")");
  sqlite3_close(db);
  return count;
}

#ifdef MESSAGE_PLATFORM_HAS_MYSQL
// Counts with the MySQL C API on the URL's first reachable host.
RowCount count_mysql_rows(const std::string& url, const std::string& table,
                          const std::string& of_run) {
  RowCount count;
  const auditpipe::Url u = auditpipe::parse_url(url);
  for (const auto& h : u.hosts) {
    MYSQL* m = mysql_init(nullptr);
    const bool socket = !h.host.empty() && h.host.front() == '/';
    if (mysql_real_connect(m, socket ? "localhost" : h.host.c_str(), u.user.c_str(),
                           u.password.value_or("").c_str(), u.path.c_str(), h.port.value_or(3306),
                           socket ? h.host.c_str() : nullptr, 0) == nullptr) {
      mysql_close(m);
      continue;
    }
    auto scalar = [&](const std::string& sql) -> std::int64_t {
      std::int64_t v = 0;
      if (mysql_query(m, sql.c_str()) == 0) {
        if (MYSQL_RES* r = mysql_store_result(m)) {
          if (MYSQL_ROW row = mysql_fetch_row(r); row && row[0]) v = std::stoll(row[0]);
          mysql_free_result(r);
        }
      }
      return v;
    };
    count.rows = scalar("SELECT COUNT(*) FROM `" + table + "` WHERE " + of_run);
    count.distinct_keys =
        scalar("SELECT COUNT(DISTINCT source_id, seq) FROM `" + table + "` WHERE " + of_run);
    mysql_close(m);
    break;
  }
  return count;
}
#endif

#ifdef MESSAGE_PLATFORM_HAS_POSTGRESQL
RowCount count_postgres_rows(const std::string& url, const std::string& table,
                             const std::string& of_run) {
  RowCount count;
  const auditpipe::Url u = auditpipe::parse_url(url);
  const auto& h = u.hosts.at(0);
  const std::string conninfo =
      "host='" + h.host + "' port=" + std::to_string(h.port.value_or(5432)) + " dbname='" + u.path +
      "' user='" + u.user + "' password='" + u.password.value_or("") + "'";
  PGconn* c = PQconnectdb(conninfo.c_str());
  auto scalar = [&](const std::string& sql) -> std::int64_t {
    PGresult* r = PQexec(c, sql.c_str());
    std::int64_t v = 0;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
      v = std::stoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
  };
  if (PQstatus(c) == CONNECTION_OK) {
    count.rows = scalar("SELECT COUNT(*) FROM \"" + table + "\" WHERE " + of_run);
    count.distinct_keys = scalar("SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM \"" +
                                 table + "\" WHERE " + of_run + ") d");
  }
  PQfinish(c);
  return count;
}
#endif

}  // namespace

RowCount count_rows(const std::string& url, const std::string& table, std::int64_t base) {
  const std::string of_run =
      "source_id BETWEEN " + std::to_string(base) + " AND " + std::to_string(base + 0xffff);
#ifdef MESSAGE_PLATFORM_HAS_MYSQL
  if (starts_with(url, "mysql://") || starts_with(url, "mariadb://"))
    return count_mysql_rows(url, table, of_run);
#endif
#ifdef MESSAGE_PLATFORM_HAS_POSTGRESQL
  if (starts_with(url, "postgresql://") || starts_with(url, "postgres://")) {
    return count_postgres_rows(url, table, of_run);
  }
#endif
  if (starts_with(url, "sqlite://")) return count_sqlite_rows(url, table, of_run);
  return {};
}

}  // namespace platform
