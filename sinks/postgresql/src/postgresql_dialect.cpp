// PostgreSQL's dialect (postgresql_dialect.h): the constant the PostgreSQL
// sink gives the SQL sink skeleton, which reads it at open().
#include "postgresql_dialect.h"

namespace auditpipe::postgresql {

const SqlDialect postgresql_dialect{
    // Unsigned types one size up, so that every value fits.
    // boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64, timestamp, text:
    .column_types = {"BOOLEAN", "SMALLINT", "SMALLINT", "INTEGER", "BIGINT", "SMALLINT", "INTEGER",
                     "BIGINT", "DOUBLE PRECISION", "TIMESTAMP(6) WITH TIME ZONE", "TEXT"},
    .catalog_parameter = "$1",
    // ON CONFLICT (source_id, seq) needs a unique index on exactly that pair.
    .unique_keys_query =
        "SELECT i.indexrelid::regclass::text, lower(a.attname::text) FROM pg_index i "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisunique",
};

}  // namespace auditpipe::postgresql
