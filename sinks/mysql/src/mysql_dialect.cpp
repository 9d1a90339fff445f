// MySQL's dialect (mysql_dialect.h): the constant the MySQL sink gives the
// SQL sink skeleton, which reads it at open().
#include "mysql_dialect.h"

#include <string>

namespace auditpipe::mysql {

namespace {

// VARCHAR(N) counts characters, so N bytes of UTF-8 always fit; long ones
// go to TEXT types, which do not count against the row size limit.
std::string text_type(std::uint32_t max_length) {
  if (max_length <= 1024) return "VARCHAR(" + std::to_string(max_length) + ")";
  return max_length <= 65535 ? "TEXT" : "MEDIUMTEXT";
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
        "EXTRA NOT LIKE '%auto_increment%' AND IS_GENERATED = 'NEVER', '1', '0') "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    .unique_keys_query =
        "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS "
        "WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
};

}  // namespace auditpipe::mysql
