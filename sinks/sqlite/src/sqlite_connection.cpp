// SqliteConnection (sqlite_connection.h): the catalog queries and DDL of
// the skeleton's table check, through SOCI.
#include "sqlite_connection.h"

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

}  // namespace auditpipe::sqlite
