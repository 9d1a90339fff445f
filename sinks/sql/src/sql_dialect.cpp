// The statement pieces of a table in a dialect (auditpipe/sink/sql_dialect.h).
// Called by the SQL sink skeleton at open(); the sinks' write paths read
// the result.
#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe {

std::string SqlDialect::quote(std::string_view identifier) const {
  std::string out(1, identifier_quote);
  for (char ch : identifier) {
    if (ch == identifier_quote) out += ch;
    out += ch;
  }
  out += identifier_quote;
  return out;
}

namespace {

std::string_view entry(const SqlColumnTypes& t, ColumnType type) {
  switch (type) {
    case ColumnType::boolean:
      return t.boolean;
    case ColumnType::int8:
      return t.int8;
    case ColumnType::int16:
      return t.int16;
    case ColumnType::int32:
      return t.int32;
    case ColumnType::int64:
      return t.int64;
    case ColumnType::uint8:
      return t.uint8;
    case ColumnType::uint16:
      return t.uint16;
    case ColumnType::uint32:
      return t.uint32;
    case ColumnType::float64:
      return t.float64;
    case ColumnType::timestamp:
      return t.timestamp;
    case ColumnType::text:
      break;
  }
  return t.text;
}

}  // namespace

std::string SqlDialect::column_type(const Column& column) const {
  if (column.type == ColumnType::text && text_type != nullptr) return text_type(column.max_length);
  return std::string(entry(column_types, column.type));
}

std::string_view SqlDialect::accepted_types_of(const Column& column) const {
  return entry(accepted_types, column.type);
}

std::string SqlDialect::table_columns_query() const {
  if (!columns_query.empty()) return std::string(columns_query);
  return "SELECT lower(column_name), coalesce(character_maximum_length, 0), lower(data_type), "
         "data_type, CASE WHEN is_nullable = 'YES' THEN '1' ELSE '0' END, CASE WHEN is_nullable "
         "= 'NO' AND column_default IS NULL THEN '1' ELSE '0' END FROM "
         "information_schema.columns WHERE table_schema = " +
         std::string(current_schema) + " AND table_name = " + std::string(catalog_parameter);
}

std::string SqlDialect::add_column(std::string_view table, const Column& column) const {
  // Nullable whatever the member: rows already in the table never had the
  // value, and NULL says so where a DEFAULT of '' or 0 would make one up.
  return "ALTER TABLE " + quote(table) + " ADD COLUMN " + quote(column.name) + " " +
         column_type(column);
}

std::string SqlTableText::single_row_insert() const {
  std::string sql = insert_head + "(";
  for (std::size_t i = 0; i < column_count; ++i) sql += i ? ",?" : "?";
  return sql + ")" + insert_tail;
}

SqlTableText sql_table_text(const SqlDialect& d, const TableDescriptor& table) {
  const std::string source_id = d.quote(source_id_column), seq = d.quote(seq_column);
  SqlTableText t;
  t.table = d.quote(table.name);
  for (const Column& c : table.columns) t.columns += d.quote(c.name) + ",";
  t.columns += source_id + "," + seq;
  t.column_count = table.columns.size() + 2;
  t.insert_head = "INSERT INTO " + t.table + " (" + t.columns + ") VALUES ";
  switch (d.idempotent_insert) {
    case SqlDialect::IdempotentInsert::on_duplicate_key_update:
      t.insert_tail = " ON DUPLICATE KEY UPDATE " + seq + " = " + seq;
      break;
    case SqlDialect::IdempotentInsert::on_conflict_do_nothing:
      t.insert_tail = " ON CONFLICT (" + source_id + ", " + seq + ") DO NOTHING";
      break;
  }
  t.create_table = "CREATE TABLE IF NOT EXISTS " + t.table + " (";
  for (const Column& c : table.columns) {
    // A nullable member's column takes NULL; every other refuses it, so a
    // value the record always has is never missing from a row.
    t.create_table +=
        d.quote(c.name) + " " + d.column_type(c) + (c.nullable ? ", " : " NOT NULL, ");
  }
  const std::string key_type(d.key_column_type);
  t.create_table += source_id + " " + key_type + " NOT NULL, " + seq + " " + key_type +
                    " NOT NULL, " + std::string(d.key_constraint) + " (" + source_id + ", " + seq +
                    "))" + std::string(d.table_options);
  return t;
}

}  // namespace auditpipe
