// SQLite's dialect (sqlite_dialect.h) and the catalog queries of
// SqliteConnection that the skeleton's table check calls, through SOCI.
#include "sqlite_dialect.h"

#include "sqlite_connection.h"

namespace auditpipe::soci_sink {

namespace {

std::string column_type(const Column& c) {
  switch (c.type) {
    case ColumnType::float64:
      return "REAL";
    case ColumnType::text:
      return "TEXT";
    default:
      return "INTEGER";  // integers, booleans, timestamps (microseconds)
  }
}

}  // namespace

const SqlDialect sqlite_dialect{
    .identifier_quote = '"',
    .column_type = column_type,
    .key_column_type = "INTEGER",
    .key_constraint = "UNIQUE",
    // Values of the wrong type are refused instead of converted.
    .table_options = " STRICT",
    .idempotent_insert = SqlDialect::IdempotentInsert::on_conflict_do_nothing,
};

std::vector<CatalogColumn> SqliteConnection::table_columns(const std::string& table) {
  // Tables only, as CREATE TABLE sees them (a view of the name is not one).
  std::vector<CatalogColumn> out;
  ::soci::rowset<std::string> rows =
      (session.prepare << "SELECT lower(c.name) FROM sqlite_master m, pragma_table_info(m.name) c "
                          "WHERE m.type = 'table' AND m.name = :t",
       ::soci::use(table));
  for (const auto& name : rows) out.push_back({name, 0});
  return out;
}

std::vector<CatalogUniqueKey> SqliteConnection::unique_keys(const std::string& table) {
  std::vector<CatalogUniqueKey> out;
  ::soci::rowset<::soci::row> rows =
      (session.prepare
           << "SELECT i.name, lower(c.name) FROM pragma_index_list(:t) i, "
              "pragma_index_info(i.name) c WHERE i.\"unique\" = 1 AND c.name IS NOT NULL",
       ::soci::use(table));
  for (const auto& r : rows) out.push_back({r.get<std::string>(0), {r.get<std::string>(1)}});
  return out;
}

void SqliteConnection::execute_ddl(const std::string& sql) {
  session << sql;
}

}  // namespace auditpipe::soci_sink
