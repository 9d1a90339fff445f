// MySQL's dialect (mysql_dialect.h): the constant the MySQL sink gives the
// SQL sink skeleton, which reads it at open().
#include "mysql_dialect.h"

#include <algorithm>
#include <string>
#include <vector>

namespace auditpipe::mysql {

namespace {

// VARCHAR(N) counts characters, so N bytes of UTF-8 always fit, and so do
// text limited to N characters (a schema read from VARCHAR(N)); long ones go
// to TEXT types, which are sized in bytes and do not count against the row
// size limit.
std::string text_type(std::uint32_t max_length, std::uint32_t max_chars) {
  const std::uint32_t varchar = max_chars != 0 ? max_chars : max_length;
  if (varchar <= 1024) return "VARCHAR(" + std::to_string(varchar) + ")";
  return max_length <= 65535 ? "TEXT" : "MEDIUMTEXT";
}

// The row of schema_query: COLUMN_NAME, DATA_TYPE, COLUMN_TYPE,
// CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, DATETIME_PRECISION,
// IS_NULLABLE, COLUMN_DEFAULT, EXTRA, whether the server is MariaDB,
// CHARACTER_SET_NAME.
// Generated columns are left out; AUTO_INCREMENT and computed defaults are
// filled_by_database.
// Types map to what accepted_types takes for a ColumnType whose values
// the column holds: TINYINT(1) (what BOOLEAN is) to boolean, the integers
// by width and sign, DOUBLE, DATETIME(6), VARCHAR(n) to n characters in
// the 4n bytes of UTF-8 they can take, and the TEXT types to the smaller of
// their size and `unbounded`.
CatalogColumn schema_column(const std::vector<std::optional<std::string>>& row,
                            std::uint32_t unbounded) {
  auto at = [&row](std::size_t i) { return i < row.size() && row[i] ? *row[i] : std::string(); };
  CatalogColumn c;
  c.name = at(0);
  const std::string type = at(1), column_type = at(2);
  c.declared = column_type;
  // EXTRA: "virtual generated" / "stored generated" (MySQL 8 marks an
  // expression default "default_generated", which is not one).
  if (at(8).find(" generated") != std::string::npos) {
    c.generated = true;
    return c;
  }
  const bool is_unsigned = column_type.find("unsigned") != std::string::npos;
  ColumnSpec spec;
  spec.name = c.name;
  spec.nullable = at(6) == "YES";
  // Defaults: MariaDB (10.2.7 on) writes COLUMN_DEFAULT as SQL, a string
  // quoted, NULL as the word, an expression as its text: only a literal is
  // kept. MySQL writes a literal default's value unquoted and marks an
  // expression DEFAULT_GENERATED in EXTRA (CURRENT_TIMESTAMP, before 8.0.13,
  // only by its name).
  const bool mariadb = at(9) == "1";
  const bool has_default = row.size() > 7 && row[7];
  const std::string default_text = has_default ? *row[7] : std::string();
  const bool computed_default =
      has_default && (mariadb ? sql_default_is_computed(default_text, true)
                              : at(8).find("default_generated") != std::string::npos ||
                                    default_text.rfind("CURRENT_TIMESTAMP", 0) == 0 ||
                                    default_text.rfind("current_timestamp", 0) == 0);
  const bool database_fills = computed_default || at(8).find("auto_increment") != std::string::npos;
  // A column the database fills (a TIMESTAMP DEFAULT CURRENT_TIMESTAMP) of
  // a type no ColumnType holds is left to it, as a generated one is: loads
  // never write it.
  auto refuse = [&c, database_fills](std::string why) {
    if (database_fills) {
      c.generated = true;
    } else {
      c.why = std::move(why);
    }
    return c;
  };
  auto number = [&](std::size_t i) -> std::uint64_t {
    try {
      return std::stoull(at(i));
    } catch (...) {
      return 0;
    }
  };
  if (type == "tinyint") {
    spec.type = is_unsigned                               ? ColumnType::uint8
                : column_type.rfind("tinyint(1)", 0) == 0 ? ColumnType::boolean
                                                          : ColumnType::int8;
  } else if (type == "smallint") {
    spec.type = is_unsigned ? ColumnType::uint16 : ColumnType::int16;
  } else if (type == "mediumint") {
    return refuse(std::string("the 16-bit type is too narrow for it, and the sink refuses ") +
                  (is_unsigned ? "uint32 records in a column narrower than INT UNSIGNED"
                               : "int32 records in a column narrower than INT") +
                  " (make it INT)");
  } else if (type == "int") {
    spec.type = is_unsigned ? ColumnType::uint32 : ColumnType::int32;
  } else if (type == "bigint") {
    if (is_unsigned) {
      return refuse(
          "no column type holds BIGINT UNSIGNED's values (int64 stops at 2^63-1, and "
          "there is no uint64)");
    }
    spec.type = ColumnType::int64;
  } else if (type == "double") {
    spec.type = ColumnType::float64;
  } else if (type == "datetime" || type == "timestamp") {
    // A time the database fills (DEFAULT CURRENT_TIMESTAMP) is a timestamp
    // left to it: a load that is given values for it keeps it, and the
    // sink's table check then refuses the type, by name.
    if (database_fills) {
      spec.type = ColumnType::timestamp;
    } else if (type == "timestamp") {
      return refuse(
          "TIMESTAMP holds only 1970-2038 and converts by the session's time zone; "
          "timestamps need DATETIME(6)");
    } else if (at(5) != "6") {
      return refuse(
          "timestamps need DATETIME(6): with fewer fractional digits the server "
          "rounds the microseconds, and the sink refuses it");
    } else {
      spec.type = ColumnType::timestamp;
    }
  } else if (type == "varchar") {
    spec.type = ColumnType::text;
    // VARCHAR(n) holds n characters, not n bytes: cut to n bytes, ten
    // characters of CJK text would keep three. Records carry UTF-8, up to 4
    // bytes a character, whatever the column's own character set stores
    // (CHARACTER_OCTET_LENGTH counts those: a latin1 column's ten 'é' are 20
    // bytes of UTF-8); what that set cannot hold the server refuses.
    const std::uint64_t chars = std::min<std::uint64_t>(number(3), 16u << 20);
    spec.max_length = static_cast<std::uint32_t>(std::min<std::uint64_t>(chars * 4, 16u << 20));
    spec.max_chars = static_cast<std::uint32_t>(std::min<std::uint64_t>(chars, spec.max_length));
  } else if (type == "tinytext" || type == "text" || type == "mediumtext" || type == "longtext") {
    spec.type = ColumnType::text;
    // Sized in bytes of the column's own character set. In utf8mb4 (and
    // utf8mb3) those are the UTF-8 bytes a record carries; in another set
    // (latin1: one byte a character, 'é' two in UTF-8) the column holds
    // CHARACTER_MAXIMUM_LENGTH characters, of up to 4 UTF-8 bytes each.
    const std::string charset = at(10);
    if (charset.empty() || charset.rfind("utf8", 0) == 0) {
      const std::uint64_t octets = number(4);
      spec.max_length = static_cast<std::uint32_t>(
          octets == 0 ? unbounded : std::min<std::uint64_t>(octets, unbounded));
    } else {
      const std::uint64_t chars = std::min<std::uint64_t>(number(3), unbounded);
      spec.max_length = static_cast<std::uint32_t>(
          chars == 0 ? unbounded : std::min<std::uint64_t>(chars * 4, unbounded));
      spec.max_chars =
          chars == 0 ? 0
                     : static_cast<std::uint32_t>(std::min<std::uint64_t>(chars, spec.max_length));
    }
  } else if (type == "char") {
    return refuse(
        "CHAR pads values with spaces and drops trailing ones; text needs VARCHAR or a "
        "TEXT type");
  } else if (type == "float") {
    return refuse("FLOAT is single precision; float64 needs DOUBLE");
  } else if (type == "decimal") {
    return refuse(
        "a double would not give DECIMAL's exact values back; make it DOUBLE, or "
        "BIGINT for whole numbers");
  } else {
    return refuse(
        "no column type maps to it (TINYINT, SMALLINT, INT, BIGINT, their UNSIGNED "
        "kinds but BIGINT's, DOUBLE, DATETIME(6), VARCHAR and the TEXT types do)");
  }
  if (has_default) {
    if (mariadb) {
      spec.default_value = sql_literal_value(default_text, true);
    } else if (!computed_default) {
      spec.default_value = default_text;
    }
  }
  spec.filled_by_database = database_fills;
  c.spec = std::move(spec);
  return c;
}

}  // namespace

const SqlDialect mysql_dialect{
    .identifier_quote = '`',
    // boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64,
    // timestamp; text by its length (text_type):
    .column_types = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "TINYINT UNSIGNED",
                     "SMALLINT UNSIGNED", "INT UNSIGNED", "DOUBLE", "DATETIME(6)"},
    .text_type = text_type,
    .table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    .idempotent_insert = SqlDialect::IdempotentInsert::on_duplicate_key_update,
    // What an existing table may have instead (sql_dialect.h has the rule):
    // the same or a wider integer, unsigned kinds also in a wider signed
    // one; DOUBLE; DATETIME(6) only (TIMESTAMP holds 1970-2038 and converts
    // by the session's time zone; fewer digits round the microseconds);
    // any VARCHAR or TEXT type (CHAR drops trailing spaces). Named as the
    // columns query reports them: DATA_TYPE, " unsigned", the precision of
    // date and time types.
    .accepted_types = {"tinyint|smallint|mediumint|int|bigint|tinyint unsigned|smallint unsigned|"
                       "mediumint unsigned|int unsigned|bigint unsigned",
                       "tinyint|smallint|mediumint|int|bigint", "smallint|mediumint|int|bigint",
                       "int|bigint", "bigint",
                       "tinyint unsigned|smallint|smallint unsigned|mediumint|mediumint unsigned|"
                       "int|int unsigned|bigint|bigint unsigned",
                       "smallint unsigned|mediumint|mediumint unsigned|int|int unsigned|bigint|"
                       "bigint unsigned",
                       "int unsigned|bigint|bigint unsigned", "double", "datetime(6)",
                       "varchar|tinytext|text|mediumtext|longtext"},
    .key_accepted_types = "bigint|bigint unsigned",
    .current_schema = "DATABASE()",
    .columns_query =
        "SELECT LOWER(COLUMN_NAME), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), CONCAT(DATA_TYPE, "
        "IF(COLUMN_TYPE LIKE '%unsigned%', ' unsigned', ''), IF(DATA_TYPE IN ('datetime', "
        "'timestamp', 'time'), CONCAT('(', DATETIME_PRECISION, ')'), '')), COLUMN_TYPE, "
        "IF(IS_NULLABLE = 'YES', '1', '0'), IF(IS_NULLABLE = 'NO' AND COLUMN_DEFAULT IS NULL AND "
        "EXTRA NOT LIKE '%auto_increment%' AND IS_GENERATED = 'NEVER', '1', '0'), "
        "COALESCE(CHARACTER_SET_NAME, '') "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    .unique_keys_query =
        "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS "
        "WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    .name = "mysql",
    .schema_query =
        "SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), CHARACTER_MAXIMUM_LENGTH, "
        "CHARACTER_OCTET_LENGTH, DATETIME_PRECISION, IS_NULLABLE, COLUMN_DEFAULT, LOWER(EXTRA), "
        "IF(VERSION() LIKE '%MariaDB%', '1', '0'), COALESCE(CHARACTER_SET_NAME, '') "
        "FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
    .schema_column = schema_column,
    .max_identifier_bytes = 64,
};

}  // namespace auditpipe::mysql
