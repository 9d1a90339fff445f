// PostgreSQL's dialect (postgresql_dialect.h): the constant the PostgreSQL
// sink gives the SQL sink skeleton, which reads it at open().
#include "postgresql_dialect.h"

namespace auditpipe::postgresql {

const SqlDialect postgresql_dialect{
    // Unsigned types one size up, so that every value fits.
    // boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64, timestamp, text:
    .column_types = {"BOOLEAN", "SMALLINT", "SMALLINT", "INTEGER", "BIGINT", "SMALLINT", "INTEGER",
                     "BIGINT", "DOUBLE PRECISION", "TIMESTAMP(6) WITH TIME ZONE", "TEXT"},
    // What an existing table may have instead (sql_dialect.h has the rule):
    // the same or a wider integer, DOUBLE PRECISION, timestamps with
    // microseconds with or without time zone (the sink writes UTC with an
    // explicit offset, which a column without time zone keeps as UTC),
    // text or VARCHAR. Named as information_schema.columns.data_type does,
    // timestamps with their precision.
    .accepted_types = {"boolean", "smallint|integer|bigint", "smallint|integer|bigint",
                       "integer|bigint", "bigint", "smallint|integer|bigint", "integer|bigint",
                       "bigint", "double precision",
                       "timestamp with time zone(6)|timestamp without time zone(6)",
                       "text|character varying"},
    .key_accepted_types = "bigint",
    .catalog_parameter = "$1",
    .columns_query =
        "SELECT lower(column_name), coalesce(character_maximum_length, 0), t.type, "
        "t.type || coalesce('(' || character_maximum_length || ')', ''), "
        "CASE WHEN is_nullable = 'YES' THEN '1' ELSE '0' END, "
        "CASE WHEN is_nullable = 'NO' AND column_default IS NULL AND is_identity = 'NO' AND "
        "is_generated = 'NEVER' THEN '1' ELSE '0' END "
        "FROM information_schema.columns, LATERAL (SELECT data_type || CASE WHEN data_type LIKE "
        "'timestamp%' THEN '(' || datetime_precision || ')' ELSE '' END AS type) t "
        "WHERE table_schema = current_schema() AND table_name = $1",
    // ON CONFLICT (source_id, seq) needs a unique index on exactly that pair.
    .unique_keys_query =
        "SELECT i.indexrelid::regclass::text, lower(a.attname::text) FROM pg_index i "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisunique",
    // Table-level INSERT, which COPY and INSERT ... ON CONFLICT DO NOTHING
    // need; without it every batch would fail with 42501.
    .insert_privilege_query =
        "SELECT has_table_privilege(to_regclass(quote_ident($1)), 'INSERT'), current_user",
};

}  // namespace auditpipe::postgresql
