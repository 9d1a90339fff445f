// SqliteConnection (sqlite_connection.h): the catalog queries and DDL of
// the skeleton's table check, through SOCI, and the interrupt.
#include "sqlite_connection.h"

#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

namespace auditpipe::sqlite {

std::vector<std::vector<std::string>> SqliteConnection::catalog_rows(std::string_view query,
                                                                     const std::string& table) {
  std::vector<std::vector<std::string>> out;
  ::soci::rowset<::soci::row> rows = (session.prepare << query, ::soci::use(table, "table"));
  for (const ::soci::row& r : rows) {
    std::vector<std::string>& values = out.emplace_back();
    for (std::size_t i = 0; i < r.size(); ++i) values.push_back(r.get<std::string>(i, ""));
  }
  return out;
}

void SqliteConnection::execute_ddl(const std::string& sql) {
  session << sql;
}

void SqliteConnection::cancel_io() noexcept {
  // The handle is fixed from open to close, and the skeleton never calls
  // this on a connection being closed.
  if (handle != nullptr) sqlite3_interrupt(handle);
}

}  // namespace auditpipe::sqlite
