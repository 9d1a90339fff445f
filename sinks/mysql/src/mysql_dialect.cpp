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
    .current_schema = "DATABASE()",
    .unique_keys_query =
        "SELECT INDEX_NAME, LOWER(COLUMN_NAME) FROM information_schema.STATISTICS "
        "WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
};

}  // namespace auditpipe::mysql
