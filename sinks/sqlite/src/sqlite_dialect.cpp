// SQLite's dialect (sqlite_dialect.h): the constant the SQLite sink gives
// the SQL sink skeleton, which reads it at open().
#include "sqlite_dialect.h"

#include <optional>
#include <string>
#include <vector>

namespace auditpipe::sqlite {

namespace {

// The row of schema_query: name, declared type, notnull, dflt_value, whether
// the table is STRICT, whether it is the rowid (an INTEGER PRIMARY KEY
// alone, which SQLite fills in). Generated columns are not in
// pragma_table_info. By the affinity SQLite gives the declared type (as
// the columns query decides it): INTEGER to int64 (SQLite stores any 64-bit
// integer whatever the declared width, so nothing narrower holds what may
// be there), REAL to float64, TEXT to text of `unbounded` bytes (SQLite
// keeps no length: VARCHAR(10) holds longer values too).
CatalogColumn schema_column(const std::vector<std::optional<std::string>>& row,
                            std::uint32_t unbounded) {
  auto at = [&row](std::size_t i) { return i < row.size() && row[i] ? *row[i] : std::string(); };
  CatalogColumn c;
  c.name = at(0);
  std::string type = at(1);
  c.declared = type.empty() ? "(no type)" : type;
  for (char& ch : type) {
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  }
  auto has = [&type](const char* part) { return type.find(part) != std::string::npos; };
  ColumnSpec spec;
  spec.name = c.name;
  spec.nullable = at(2) == "0";
  if (type == "ANY" && at(4) == "1") {
    c.why = "ANY keeps values of every type as given; no one column type holds them";
    return c;
  }
  if (has("INT")) {
    spec.type = ColumnType::int64;
  } else if (has("CHAR") || has("CLOB") || has("TEXT")) {
    spec.type = ColumnType::text;
    spec.max_length = unbounded;
  } else if (type.empty() || has("BLOB")) {
    c.why = "BLOB affinity keeps bytes as given; no column type maps to it";
    return c;
  } else if (has("REAL") || has("FLOA") || has("DOUB")) {
    spec.type = ColumnType::float64;
  } else {
    c.why =
        "NUMERIC affinity (DECIMAL, BOOLEAN, DATE, ...) turns values into integers or reals "
        "as it sees fit; declare it INTEGER, REAL or TEXT";
    return c;
  }
  // dflt_value is the default's SQL text: kept only when it is a literal.
  if (row.size() > 3 && row[3]) {
    spec.default_value = sql_literal_value(*row[3], false);
    spec.filled_by_database = sql_default_is_computed(*row[3], false);
  }
  if (at(5) == "1") spec.filled_by_database = true;  // the rowid
  c.spec = std::move(spec);
  return c;
}

}  // namespace

const SqlDialect sqlite_dialect{
    // Integers, booleans and timestamps (microseconds since the epoch) as
    // INTEGER, doubles as REAL, text as TEXT (bytes stored exactly).
    // boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64, timestamp, text:
    .column_types = {"INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER",
                     "INTEGER", "REAL", "INTEGER", "TEXT"},
    .key_column_type = "INTEGER",
    .key_constraint = "UNIQUE",
    // Values of the wrong type are refused instead of converted.
    .table_options = " STRICT",
    // What an existing table may have instead (sql_dialect.h has the rule):
    // a column of the same affinity, or ANY in a STRICT table, which keeps
    // values as they are given. NUMERIC affinity would turn a double
    // without a fraction into an integer, REAL an integer into a double.
    .accepted_types = {"integer|any", "integer|any", "integer|any", "integer|any", "integer|any",
                       "integer|any", "integer|any", "integer|any", "real|any", "integer|any",
                       "text|any"},
    .key_accepted_types = "integer|any",
    .catalog_parameter = ":table",
    // No information_schema. Tables only, as CREATE TABLE sees them (a view
    // of the name is not one). The type is the column's affinity by
    // SQLite's rules for a declared type (datatype3.html, section 3.1), in
    // their order, or ANY in a STRICT table.
    .columns_query =
        "SELECT lower(c.name), '0', CASE "
        "WHEN upper(c.type) = 'ANY' AND l.strict THEN 'any' "
        "WHEN instr(upper(c.type), 'INT') THEN 'integer' "
        "WHEN instr(upper(c.type), 'CHAR') OR instr(upper(c.type), 'CLOB') "
        "OR instr(upper(c.type), 'TEXT') THEN 'text' "
        "WHEN c.type = '' OR instr(upper(c.type), 'BLOB') THEN 'blob' "
        "WHEN instr(upper(c.type), 'REAL') OR instr(upper(c.type), 'FLOA') "
        "OR instr(upper(c.type), 'DOUB') THEN 'real' ELSE 'numeric' END, "
        "CASE WHEN c.type = '' THEN '(no type)' ELSE c.type END, "
        "CASE WHEN c.\"notnull\" THEN '0' ELSE '1' END, "
        // An INTEGER PRIMARY KEY alone is the rowid: SQLite fills it in.
        "CASE WHEN c.\"notnull\" AND c.dflt_value IS NULL AND NOT (c.pk = 1 AND "
        "upper(c.type) = 'INTEGER' AND (SELECT count(*) FROM pragma_table_info(m.name) k "
        "WHERE k.pk > 0) = 1) THEN '1' ELSE '0' END "
        "FROM sqlite_master m JOIN pragma_table_info(m.name) c "
        "JOIN pragma_table_list l ON l.name = m.name AND l.schema = 'main' "
        "WHERE m.type = 'table' AND m.name = :table",
    .unique_keys_query =
        "SELECT i.name, lower(c.name), CASE WHEN i.partial THEN 'partial (it has a WHERE "
        "clause)' WHEN EXISTS (SELECT 1 FROM pragma_index_info(i.name) x WHERE x.name IS NULL) "
        "THEN 'also over an expression' ELSE '' END FROM pragma_index_list(:table) i, "
        "pragma_index_info(i.name) c WHERE i.\"unique\" = 1 AND c.name IS NOT NULL",
    .name = "sqlite",
    .schema_query =
        "SELECT c.name, c.type, c.\"notnull\", c.dflt_value, l.strict, "
        "CASE WHEN c.pk = 1 AND upper(c.type) = 'INTEGER' AND (SELECT count(*) FROM "
        "pragma_table_info(m.name) k WHERE k.pk > 0) = 1 THEN '1' ELSE '0' END "
        "FROM sqlite_master m JOIN pragma_table_info(m.name) c "
        "JOIN pragma_table_list l ON l.name = m.name AND l.schema = 'main' "
        "WHERE m.type = 'table' AND m.name = ? ORDER BY c.cid",
    .schema_column = schema_column,
};

}  // namespace auditpipe::sqlite
