#include "database.h"

#include <auditpipe/soci/sqlite_sink.h>
#include <auditpipe/status.h>
#include <auditpipe/url.h>
#include <sqlite3.h>

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

}  // namespace

std::shared_ptr<auditpipe::Sink> open_sink(const std::string& url) {
  if (starts_with(url, "sqlite://")) return auditpipe::soci_sink::open_sqlite(url);
  throw auditpipe::error("message_platform: unsupported database URL '" +
                         auditpipe::redact_url(url) + "' (this build supports sqlite://)");
}

RowCount count_rows(const std::string& url, const std::string& table) {
  RowCount count;
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
