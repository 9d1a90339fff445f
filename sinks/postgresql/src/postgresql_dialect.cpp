// PostgreSQL's dialect (postgresql_dialect.h): the constant the PostgreSQL
// sink gives the SQL sink skeleton, which reads it at open().
#include "postgresql_dialect.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace auditpipe::postgresql {

namespace {

// The row of schema_query: column_name, data_type, character_maximum_length,
// datetime_precision, is_nullable, column_default, the type as declared
// (format_type), is_identity, is_generated. Generated columns are left out;
// identity columns and computed defaults (nextval, now()) are
// filled_by_database. Types map to what accepted_types takes for a ColumnType
// whose values the column holds: boolean, smallint/integer/bigint to
// int16/int32/int64, double precision, timestamps with 6 fractional digits
// (with or without time zone), varchar(n) to n characters in up to 4n bytes
// (UTF-8), text and varchar without a length to `unbounded`.
CatalogColumn schema_column(const std::vector<std::optional<std::string>>& row,
                            std::uint32_t unbounded) {
  auto at = [&row](std::size_t i) { return i < row.size() && row[i] ? *row[i] : std::string(); };
  CatalogColumn c;
  c.name = at(0);
  c.declared = at(6).empty() ? at(1) : at(6);
  if (at(8) == "ALWAYS") {
    c.generated = true;
    return c;
  }
  const std::string type = at(1);
  ColumnSpec spec;
  spec.name = c.name;
  spec.nullable = at(4) == "YES";
  // column_default is an expression: kept only when it is a literal, its
  // casts stripped ('x'::character varying is x, (-1)::integer -1);
  // nextval(...), now() and other expressions are left out.
  const bool database_fills =
      (row.size() > 5 && row[5] && sql_default_is_computed(*row[5], false)) ||
      at(7) == "YES";  // an identity column
  // A column the database fills (a timestamp(0) DEFAULT now()) of a type no
  // ColumnType holds is left to it, as a generated one is: loads never
  // write it.
  auto refuse = [&c, database_fills](std::string why) {
    if (database_fills) {
      c.generated = true;
    } else {
      c.why = std::move(why);
    }
    return c;
  };
  if (type == "boolean") {
    spec.type = ColumnType::boolean;
  } else if (type == "smallint") {
    spec.type = ColumnType::int16;
  } else if (type == "integer") {
    spec.type = ColumnType::int32;
  } else if (type == "bigint") {
    spec.type = ColumnType::int64;
  } else if (type == "double precision") {
    spec.type = ColumnType::float64;
  } else if (type == "timestamp with time zone" || type == "timestamp without time zone") {
    // A time the database fills (DEFAULT now()) is a timestamp left to it:
    // a load that is given values for it keeps it, and the sink's table
    // check then refuses the type, by name.
    if (at(3) != "6" && !database_fills) {
      return refuse(
          "timestamps need 6 fractional digits (timestamp(6), the default): with "
          "fewer the server rounds the microseconds, and the sink refuses it");
    }
    spec.type = ColumnType::timestamp;
  } else if (type == "text" || type == "character varying") {
    spec.type = ColumnType::text;
    std::uint64_t length = 0;
    try {
      length = row.size() > 2 && row[2] ? std::stoull(*row[2]) : 0;
    } catch (...) {
    }
    // varchar(n) holds n characters: up to 4n bytes of UTF-8.
    spec.max_length = static_cast<std::uint32_t>(
        length == 0 ? unbounded : std::min<std::uint64_t>(length * 4, 16u << 20));
    if (length != 0) {
      spec.max_chars = static_cast<std::uint32_t>(std::min<std::uint64_t>(length, spec.max_length));
    }
  } else if (type == "character") {
    return refuse("character(n) pads values with spaces; text needs text or varchar");
  } else if (type == "real") {
    return refuse("real is single precision; float64 needs double precision");
  } else if (type == "numeric") {
    return refuse(
        "a double would not give numeric's exact values back; make it double "
        "precision, or bigint for whole numbers");
  } else {
    return refuse(
        "no column type maps to it (boolean, smallint, integer, bigint, double "
        "precision, timestamp(6) with or without time zone, text and varchar do)");
  }
  if (row.size() > 5 && row[5]) spec.default_value = sql_literal_value(*row[5], false);
  spec.filled_by_database = database_fills;
  c.spec = std::move(spec);
  return c;
}

}  // namespace

const SqlDialect postgresql_dialect{
    // The sink quotes every name, and a quoted name is exact in PostgreSQL.
    .exact_column_names = true,
    // Unsigned types one size up, so that every value fits.
    // boolean, int8, int16, int32, int64, uint8, uint16, uint32, float64, timestamp, text:
    .column_types = {"BOOLEAN", "SMALLINT", "SMALLINT", "INTEGER", "BIGINT", "SMALLINT", "INTEGER",
                     "BIGINT", "DOUBLE PRECISION", "TIMESTAMP(6) WITH TIME ZONE", "TEXT"},
    .uncompressed_storage = "SET STORAGE EXTERNAL",
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
        "SELECT column_name, coalesce(character_maximum_length, 0), t.type, "
        "t.type || coalesce('(' || character_maximum_length || ')', ''), "
        "CASE WHEN is_nullable = 'YES' THEN '1' ELSE '0' END, "
        "CASE WHEN is_nullable = 'NO' AND column_default IS NULL AND is_identity = 'NO' AND "
        "is_generated = 'NEVER' THEN '1' ELSE '0' END "
        "FROM information_schema.columns, LATERAL (SELECT data_type || CASE WHEN data_type LIKE "
        "'timestamp%' THEN '(' || datetime_precision || ')' ELSE '' END AS type) t "
        "WHERE table_schema = current_schema() AND table_name = $1",
    // ON CONFLICT (source_id, seq) needs a unique index on exactly that
    // pair that it can use as its arbiter: not partial (it covers only some
    // rows: a user's partial index let every key be stored twice), checked
    // at once (a deferrable one fails every ON CONFLICT, 55000), not over an
    // expression too, and valid.
    .unique_keys_query =
        "SELECT i.indexrelid::regclass::text, a.attname::text, CASE "
        "WHEN i.indpred IS NOT NULL THEN 'partial (WHERE ' || "
        "pg_get_expr(i.indpred, i.indrelid) || ')' "
        "WHEN NOT i.indimmediate THEN 'deferrable' "
        "WHEN i.indexprs IS NOT NULL THEN 'also over an expression' "
        "WHEN NOT i.indisvalid THEN 'not valid (a CREATE INDEX CONCURRENTLY that failed)' "
        "ELSE '' END FROM pg_index i "
        // Key columns only: indkey lists an index's INCLUDE columns too.
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
        "a.attnum = ANY((i.indkey::int2[])[0:i.indnkeyatts - 1]) "
        "WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisunique",
    // Table-level INSERT, which COPY and INSERT ... ON CONFLICT DO NOTHING
    // need; without it every batch would fail with 42501. And SELECT on the
    // key columns, which the server requires of ON CONFLICT (source_id,
    // seq): without it COPY works until a batch meets a stored key (every
    // retry does), and then that batch fails for good. By attnum, so that
    // a key column's catalog spelling does not matter.
    .insert_privilege_query =
        "SELECT has_table_privilege(r, 'INSERT'), current_user, "
        "(SELECT bool_and(has_column_privilege(r, a.attnum, 'SELECT')) FROM pg_attribute a "
        "WHERE a.attrelid = r AND a.attnum > 0 AND NOT a.attisdropped AND "
        "lower(a.attname) IN ('source_id', 'seq')) "
        "FROM (SELECT to_regclass(quote_ident($1)) AS r) AS t",
    .name = "postgresql",
    // Found as the table check finds it (current_schema()).
    .schema_query =
        "SELECT c.column_name, c.data_type, c.character_maximum_length, c.datetime_precision, "
        "c.is_nullable, c.column_default, format_type(a.atttypid, a.atttypmod), "
        "c.is_identity, c.is_generated "
        "FROM information_schema.columns c JOIN pg_attribute a ON a.attrelid = "
        "(quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))::regclass "
        "AND a.attname = c.column_name "
        "WHERE c.table_schema = current_schema() AND c.table_name = ? ORDER BY c.ordinal_position",
    .schema_column = schema_column,
    .max_identifier_bytes = 63,  // NAMEDATALEN - 1
};

}  // namespace auditpipe::postgresql
