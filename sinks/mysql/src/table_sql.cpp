#include "table_sql.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"

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

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](char ch) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  });
  return s;
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

std::string escaped_literal(MysqlConnection& c, std::string_view text) {
  std::string out(text.size() * 2 + 1, '\0');
  out.resize(mysql_real_escape_string(c.handle(), out.data(), text.data(), text.size()));
  return "'" + out + "'";
}

}  // namespace

std::string quote_identifier(std::string_view name) {
  std::string out = "`";
  for (char ch : name) {
    if (ch == '`') out += '`';
    out += ch;
  }
  return out + "`";
}

TableSql table_sql(const TableDescriptor& table) {
  TableSql s;
  s.table = quote_identifier(table.name);
  for (const Column& c : table.columns) s.columns += quote_identifier(c.name) + ",";
  s.columns += quote_identifier(source_id_column) + "," + quote_identifier(seq_column);
  s.column_count = table.columns.size() + 2;
  s.insert_head = "INSERT INTO " + s.table + " (" + s.columns + ") VALUES ";
  s.insert_tail = " ON DUPLICATE KEY UPDATE " + quote_identifier(seq_column) + " = " +
                  quote_identifier(seq_column);
  return s;
}

void prepare_table(MysqlConnection& c, const TableDescriptor& table, const MysqlConfig& config) {
  const std::string name(table.name);
  const std::string where =
      "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = " + escaped_literal(c, name);
  const auto existing =
      rows(c,
           "SELECT LOWER(COLUMN_NAME), DATA_TYPE, IFNULL(CHARACTER_MAXIMUM_LENGTH, 0) "
           "FROM information_schema.COLUMNS WHERE " +
               where);
  if (existing.empty()) {
    if (!config.create_table) {
      throw error("auditpipe: table " + name + " does not exist in database " + config.database +
                  " on " + config.redacted_url + " (and create_table=false)");
    }
    std::string ddl = "CREATE TABLE IF NOT EXISTS " + quote_identifier(name) + " (";
    for (const Column& col : table.columns) {
      ddl += quote_identifier(col.name) + " " + column_type(col) + " NOT NULL, ";
    }
    ddl += quote_identifier(source_id_column) + " BIGINT NOT NULL, " +
           quote_identifier(seq_column) + " BIGINT NOT NULL, PRIMARY KEY (" +
           quote_identifier(source_id_column) + ", " + quote_identifier(seq_column) +
           ")) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    if (const auto e = c.execute(ddl)) {
      throw error("auditpipe: cannot create table " + name + " on " + config.redacted_url + ": " +
                  e->describe());
    }
    return;
  }

  std::map<std::string, std::pair<std::string, unsigned long long>> present;
  for (const auto& r : existing) present[r[0]] = {r[1], std::stoull(r[2])};
  std::string missing;
  std::set<std::string> written;
  auto need = [&](std::string_view column) {
    written.insert(lower(std::string(column)));
    if (!present.count(lower(std::string(column)))) {
      missing += (missing.empty() ? "" : ", ") + std::string(column);
    }
  };
  for (const Column& col : table.columns) need(col.name);
  need(source_id_column);
  need(seq_column);
  if (!missing.empty()) {
    throw error("auditpipe: table " + name + " on " + config.redacted_url +
                " lacks the columns the record needs: " + missing);
  }
  for (const Column& col : table.columns) {
    const auto& [type, length] = present[lower(std::string(col.name))];
    if (col.type == ColumnType::text && length != 0 && length < col.max_length) {
      diagnostics()->warn(
          "auditpipe: column {}.{} holds {} characters but records carry up to {} "
          "bytes; longer values will be refused by the server",
          name, col.name, length, col.max_length);
    }
  }

  // Unique keys: exactly one on (source_id, seq), none other over columns
  // the insert writes (ON DUPLICATE KEY UPDATE would absorb its conflicts).
  std::map<std::string, std::set<std::string>> unique_keys;
  for (const auto& r :
       rows(c,
            "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS "
            "WHERE NON_UNIQUE = 0 AND " +
                where)) {
    unique_keys[r[0]].insert(r[1]);
  }
  bool has_key = false;
  for (const auto& [index, columns] : unique_keys) {
    if (columns == std::set<std::string>{"seq", "source_id"}) {
      has_key = true;
      continue;
    }
    for (const auto& column : columns) {
      if (written.count(column)) {
        throw error("auditpipe: table " + name + " on " + config.redacted_url + " has unique key " +
                    index + " over column " + column +
                    "; auditpipe's idempotent insert would silently skip rows that conflict on it. "
                    "Drop that key or make it non-unique");
      }
    }
  }
  if (!has_key) {
    throw error("auditpipe: table " + name + " on " + config.redacted_url +
                " has no unique key on (source_id, seq); auditpipe needs it so that a retried "
                "batch is never written twice");
  }
}

}  // namespace auditpipe::mysql
