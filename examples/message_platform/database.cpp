#include "database.h"

#include <auditpipe/soci/sqlite_sink.h>
#include <auditpipe/status.h>
#include <auditpipe/url.h>
#include <sqlite3.h>

#ifdef MESSAGE_PLATFORM_HAS_MYSQL
#include <auditpipe/mysql/mysql_sink.h>
#include <mysql.h>
#endif

namespace platform {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string sqlite_path(const std::string& url) {
  std::string rest = url.substr(std::string("sqlite://").size());
  rest = rest.substr(0, rest.find('?'));
  return auditpipe::percent_decode(rest);
}

bool is_mysql(const std::string& url) {
  return starts_with(url, "mysql://") || starts_with(url, "mariadb://");
}

#ifdef MESSAGE_PLATFORM_HAS_MYSQL
// Counts with the MySQL C API on the URL's first reachable host.
RowCount count_mysql_rows(const std::string& url, const std::string& table) {
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
    count.rows = scalar("SELECT COUNT(*) FROM `" + table + "`");
    count.distinct_keys = scalar("SELECT COUNT(DISTINCT source_id, seq) FROM `" + table + "`");
    mysql_close(m);
    break;
  }
  return count;
}
#endif

}  // namespace

std::shared_ptr<auditpipe::Sink> open_sink(const std::string& url) {
  if (starts_with(url, "sqlite://")) return auditpipe::soci_sink::open_sqlite(url);
#ifdef MESSAGE_PLATFORM_HAS_MYSQL
  if (is_mysql(url)) return auditpipe::mysql::open(url);
#endif
  throw auditpipe::error("message_platform: unsupported database URL '" +
                         auditpipe::redact_url(url) +
                         "' (this build supports sqlite:// and, when built with MariaDB "
                         "Connector/C, mysql://)");
}

RowCount count_rows(const std::string& url, const std::string& table) {
  RowCount count;
#ifdef MESSAGE_PLATFORM_HAS_MYSQL
  if (is_mysql(url)) return count_mysql_rows(url, table);
#endif
  if (!starts_with(url, "sqlite://")) return count;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(sqlite_path(url).c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
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
  count.rows = scalar("SELECT COUNT(*) FROM \"" + table + "\"");
  count.distinct_keys =
      scalar("SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM \"" + table + "\")");
  sqlite3_close(db);
  return count;
}

}  // namespace platform
