// MySQL's dialect (mysql_dialect.h) and the catalog queries of
// MysqlConnection that the skeleton's table check calls.
#include "mysql_dialect.h"

#include <string>
#include <vector>

#include "auditpipe/status.h"
#include "mysql_connection.h"

namespace auditpipe::mysql {

namespace {

std::string column_type(const Column& c) {
  switch (c.type) {
    case ColumnType::boolean:
      return "BOOLEAN";
    case ColumnType::int8:
      return "TINYINT";
    case ColumnType::int16:
      return "SMALLINT";
    case ColumnType::int32:
      return "INT";
    case ColumnType::int64:
      return "BIGINT";
    case ColumnType::uint8:
      return "TINYINT UNSIGNED";
    case ColumnType::uint16:
      return "SMALLINT UNSIGNED";
    case ColumnType::uint32:
      return "INT UNSIGNED";
    case ColumnType::float64:
      return "DOUBLE";
    case ColumnType::timestamp:
      return "DATETIME(6)";
    case ColumnType::text:
      // VARCHAR(N) counts characters, so N bytes of UTF-8 always fit; long
      // ones go to TEXT types, which do not count against the row size limit.
      if (c.max_length <= 1024) return "VARCHAR(" + std::to_string(c.max_length) + ")";
      return c.max_length <= 65535 ? "TEXT" : "MEDIUMTEXT";
  }
  return "BLOB";
}

// Rows of a query, each as strings (NULL as empty).
std::vector<std::vector<std::string>> rows(MysqlConnection& c, const std::string& sql) {
  if (mysql_real_query(c.handle(), sql.data(), sql.size()) != 0) {
    throw error("auditpipe: cannot inspect the table: " + c.last_error().describe());
  }
  MYSQL_RES* r = mysql_store_result(c.handle());
  if (r == nullptr)
    throw error("auditpipe: cannot inspect the table: " + c.last_error().describe());
  std::vector<std::vector<std::string>> out;
  const unsigned fields = mysql_num_fields(r);
  while (MYSQL_ROW row = mysql_fetch_row(r)) {
    const unsigned long* lengths = mysql_fetch_lengths(r);
    std::vector<std::string> values;
    for (unsigned i = 0; i < fields; ++i)
      values.emplace_back(row[i] ? row[i] : "", row[i] ? lengths[i] : 0);
    out.push_back(std::move(values));
  }
  mysql_free_result(r);
  return out;
}

// The catalog rows of `table` in the connection's database.
std::string where_table(MysqlConnection& c, const std::string& table) {
  std::string literal(table.size() * 2 + 1, '\0');
  literal.resize(mysql_real_escape_string(c.handle(), literal.data(), table.data(), table.size()));
  return "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '" + literal + "'";
}

}  // namespace

const SqlDialect mysql_dialect{
    .identifier_quote = '`',
    .column_type = column_type,
    .key_column_type = "BIGINT",
    .key_constraint = "PRIMARY KEY",
    .table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    .idempotent_insert = SqlDialect::IdempotentInsert::on_duplicate_key_update,
};

std::vector<CatalogColumn> MysqlConnection::table_columns(const std::string& table) {
  std::vector<CatalogColumn> out;
  for (const auto& r : rows(*this,
                            "SELECT LOWER(COLUMN_NAME), IFNULL(CHARACTER_MAXIMUM_LENGTH, 0) "
                            "FROM information_schema.COLUMNS WHERE " +
                                where_table(*this, table))) {
    out.push_back({r[0], std::stoull(r[1])});
  }
  return out;
}

std::vector<CatalogUniqueKey> MysqlConnection::unique_keys(const std::string& table) {
  std::vector<CatalogUniqueKey> out;
  for (const auto& r :
       rows(*this,
            "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS "
            "WHERE NON_UNIQUE = 0 AND " +
                where_table(*this, table))) {
    out.push_back({r[0], {r[1]}});
  }
  return out;
}

void MysqlConnection::execute_ddl(const std::string& sql) {
  if (const auto e = execute(sql)) throw error(e->describe());
}

}  // namespace auditpipe::mysql
