// PostgreSQL's dialect (postgresql_dialect.h) and the catalog queries of
// PostgresConnection that the skeleton's table check calls, through SOCI.
#include "postgresql_dialect.h"

#include <string>
#include <vector>

#include "postgresql_connection.h"

namespace auditpipe::soci_sink {

namespace {

std::string column_type(const Column& c) {
  switch (c.type) {
    case ColumnType::boolean:
      return "BOOLEAN";
    case ColumnType::int8:
    case ColumnType::int16:
    case ColumnType::uint8:
      return "SMALLINT";
    case ColumnType::int32:
    case ColumnType::uint16:
      return "INTEGER";
    case ColumnType::int64:
    case ColumnType::uint32:
      return "BIGINT";
    case ColumnType::float64:
      return "DOUBLE PRECISION";
    case ColumnType::timestamp:
      return "TIMESTAMP(6) WITH TIME ZONE";
    case ColumnType::text:
      return "TEXT";
  }
  return "TEXT";
}

}  // namespace

const SqlDialect postgresql_dialect{
    .identifier_quote = '"',
    .column_type = column_type,
    .key_column_type = "BIGINT",
    .key_constraint = "PRIMARY KEY",
    .table_options = "",
    .idempotent_insert = SqlDialect::IdempotentInsert::on_conflict_do_nothing,
};

std::vector<CatalogColumn> PostgresConnection::table_columns(const std::string& table) {
  std::vector<CatalogColumn> out;
  ::soci::rowset<::soci::row> rows =
      (session_.prepare << "SELECT lower(column_name), "
                           "coalesce(character_maximum_length, 0)::bigint "
                           "FROM information_schema.columns WHERE "
                           "table_schema = current_schema() AND table_name = :t",
       ::soci::use(table));
  for (const auto& r : rows) {
    out.push_back({r.get<std::string>(0), static_cast<std::uint64_t>(r.get<long long>(1))});
  }
  return out;
}

std::vector<CatalogUniqueKey> PostgresConnection::unique_keys(const std::string& table) {
  // to_regclass() takes the name as SQL would read it: quoted.
  const std::string regclass = postgresql_dialect.quote(table);
  std::vector<CatalogUniqueKey> out;
  ::soci::rowset<::soci::row> rows =
      (session_.prepare
           << "SELECT i.indexrelid::regclass::text, lower(a.attname::text) FROM pg_index i "
              "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
              "WHERE i.indrelid = to_regclass(:t) AND i.indisunique",
       ::soci::use(regclass));
  for (const auto& r : rows) out.push_back({r.get<std::string>(0), {r.get<std::string>(1)}});
  return out;
}

void PostgresConnection::execute_ddl(const std::string& sql) {
  session_ << sql;
}

}  // namespace auditpipe::soci_sink
