// SQLite's dialect (sqlite_dialect.h): the constant the SQLite sink gives
// the SQL sink skeleton, which reads it at open().
#include "sqlite_dialect.h"

namespace auditpipe::sqlite {

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
    .catalog_parameter = ":table",
    // No information_schema. Tables only, as CREATE TABLE sees them (a view
    // of the name is not one).
    .columns_query =
        "SELECT lower(c.name), '0' FROM sqlite_master m, pragma_table_info(m.name) c "
        "WHERE m.type = 'table' AND m.name = :table",
    .unique_keys_query =
        "SELECT i.name, lower(c.name) FROM pragma_index_list(:table) i, "
        "pragma_index_info(i.name) c WHERE i.\"unique\" = 1 AND c.name IS NOT NULL",
};

}  // namespace auditpipe::sqlite
