// SqlDialect: what one database calls the parts of an audit table: how it
// quotes a name, which column type each ColumnType becomes, how a new table
// declares the (source_id, seq) key and what follows its column list, how
// its idempotent insert skips a record already stored, and how its catalog
// is asked about an existing table. SqlTableText is
// what a record type's descriptor turns into in a dialect: the statement
// pieces every write path and the table check start from.
//
// Who may call: SQL sinks (each defines one SqlDialect constant, its
// dialect file) and the SQL sink skeleton (sql_sink.h), which builds the
// table's text once at open().
//
// Thread safety: constant data and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/schema.h"

namespace auditpipe {

/// The type a new table gives each kind of record column.
struct AUDITPIPE_EXPORT SqlColumnTypes {
  std::string_view boolean{};    ///< ColumnType::boolean
  std::string_view int8{};       ///< ColumnType::int8
  std::string_view int16{};      ///< ColumnType::int16
  std::string_view int32{};      ///< ColumnType::int32
  std::string_view int64{};      ///< ColumnType::int64
  std::string_view uint8{};      ///< ColumnType::uint8
  std::string_view uint16{};     ///< ColumnType::uint16
  std::string_view uint32{};     ///< ColumnType::uint32
  std::string_view float64{};    ///< ColumnType::float64
  std::string_view timestamp{};  ///< ColumnType::timestamp
  std::string_view text{};       ///< ColumnType::text
};

/// One column of an existing table as a dialect's schema_column() reads it
/// back (auditpipe::Database::read_schema).
struct AUDITPIPE_EXPORT CatalogColumn {
  std::string name;                ///< as the catalog spells it
  std::string declared;            ///< its type as the table declares it, for messages
  std::optional<ColumnSpec> spec;  ///< unset: no ColumnType holds it, and `why` says why
  std::string why;                 ///< why no ColumnType holds it
  /// A generated column (computed from the row's other columns), or one the
  /// database fills (a computed default, an identity) of a type no
  /// ColumnType holds: no insert gives it a value, so read_schema leaves
  /// it out.
  bool generated = false;
};

/// Every field has the standard SQL default; a dialect sets what differs.
struct AUDITPIPE_EXPORT SqlDialect {
  /// How the insert skips a record whose (source_id, seq) is already stored,
  /// so that a retried batch is never written twice.
  enum class IdempotentInsert {
    /// ... ON CONFLICT (source_id, seq) DO NOTHING (PostgreSQL, SQLite).
    /// Only that key is skipped; a conflict on any other is an error.
    on_conflict_do_nothing,
    /// ... ON DUPLICATE KEY UPDATE seq = seq (MySQL). It absorbs a conflict
    /// on ANY unique key, so the table check refuses a table with another
    /// unique key over written columns: rows conflicting on it would vanish.
    on_duplicate_key_update,
  };

  char identifier_quote = '"';  ///< around a name, doubled inside it
  /// Whether a quoted column name is matched exactly (PostgreSQL: "User_Name"
  /// is not user_name) rather than in any case (MySQL, SQLite). The catalog
  /// queries then return names as they are, not lower-cased.
  bool exact_column_names = false;
  /// A new table's column types.
  SqlColumnTypes column_types = {};
  /// A text column's type by the record's capacity in bytes and its limit
  /// of characters (Column::max_chars, 0 for none), instead of
  /// column_types.text (MySQL: VARCHAR(N) for short ones); null: not used.
  std::string (*text_type)(std::uint32_t max_length, std::uint32_t max_chars) = nullptr;
  std::string_view key_column_type = "BIGINT";      ///< source_id and seq
  std::string_view key_constraint = "PRIMARY KEY";  ///< or "UNIQUE", over (source_id, seq)
  /// After CREATE TABLE's closing parenthesis, with a leading space (engine,
  /// charset, STRICT), or empty.
  std::string_view table_options = "";
  /// Appended to ALTER TABLE t ALTER COLUMN c to keep a long text column
  /// that does not compress stored without trying to (a seal's fingerprints:
  /// hex of checksums), or empty where the database does not try
  /// (InnoDB's default row format, SQLite). PostgreSQL: SET STORAGE EXTERNAL;
  /// otherwise pglz tries every seal's fingerprints, the largest part of
  /// what sealing cost the server.
  std::string_view uncompressed_storage = "";
  /// How the insert skips a repeated key.
  IdempotentInsert idempotent_insert = IdempotentInsert::on_conflict_do_nothing;

  /// The types an existing table's column may have for each kind of record
  /// column, as the columns query reports them, separated by '|'; an empty
  /// entry accepts any. The rule, in every dialect: a type is accepted when
  /// it stores every value of the record's column exactly and gives it back
  /// unchanged; anything narrower, less precise or converting is refused at
  /// open, with the table, column, found and accepted types named, instead
  /// of refusing (or altering) records at write time. So a wider integer
  /// passes (int16 into INTEGER or BIGINT; unsigned kinds into an unsigned
  /// type of the same width or any wider one); text into any length-counted
  /// text type (shorter ones only warn, as before: the server refuses
  /// overlong values one by one); timestamps only with microseconds
  /// (PostgreSQL: timestamp(6) with or without time zone, the sink writes
  /// UTC with an explicit offset; MySQL: DATETIME(6), not TIMESTAMP, which
  /// holds only 1970-2038 and converts by the session's time zone); doubles
  /// only as doubles. SQLite reports a column's affinity by its declared
  /// type's rules (INTEGER, TEXT, REAL, NUMERIC, BLOB) and ANY for an ANY
  /// column of a STRICT table (which stores values as given); integers need
  /// INTEGER affinity, doubles REAL, text TEXT.
  SqlColumnTypes accepted_types = {};
  /// The same for source_id and seq.
  std::string_view key_accepted_types = "";

  /// The catalog queries of the table check, run through
  /// SqlConnection::catalog_rows() with the table's name as their one
  /// parameter, written as `catalog_parameter`; every value comes back as
  /// text. The columns of the table come from information_schema.columns in
  /// `current_schema`, unless the dialect gives its own columns_query: a row
  /// (name, lower-cased unless exact_column_names; characters a text column holds or 0, type as
  /// accepted_types names it, type as declared, "1" if it takes NULL else
  /// "0", "1" if an insert that leaves it out fails, i.e. NOT NULL without a
  /// default, an identity, auto-increment or generated value, else "0"; and,
  /// optionally, the column's character set, empty where none applies) per
  /// column, none if there is no such table.
  std::string_view catalog_parameter = "?";
  /// The schema the table is looked for in (an SQL expression).
  std::string_view current_schema = "current_schema()";
  /// The dialect's own columns query, or empty for information_schema.columns.
  std::string_view columns_query = "";
  /// A row (key name, column as columns_query gives it[, why ON CONFLICT cannot use the key:
  /// partial, deferrable, ...; empty if it can]) per column of each unique key or unique
  /// index of the table. No standard view has them.
  std::string_view unique_keys_query = "";
  /// One row (whether the connection's user may INSERT into the table: "t"
  /// or "1" if so, the user's name, and optionally whether it may SELECT
  /// the key columns, which an insert that names its conflict target reads)
  /// for an existing table, checked at open so that a read-only user is
  /// refused at start instead of retried forever; empty where the sink
  /// checks it itself (SQLite: a read-only file; MySQL: by preparing the
  /// insert at open, on every write path).
  std::string_view insert_privilege_query = "";

  /// What auditpipe::Database::dialect() calls it: "mysql", "postgresql", "sqlite".
  std::string_view name = "";
  /// read_schema's catalog query, run through SqlConnection::query_rows()
  /// with the table's name as its one `?` parameter: one row per column of
  /// the table, in the table's order (source_id and seq among them), none
  /// if there is no such table. Its rows are what schema_column() reads.
  std::string_view schema_query = "";
  /// What one row of schema_query is as a runtime schema's column: the
  /// narrowest ColumnType that holds every value of the column AND that
  /// this dialect's accepted_types take for it (so that a schema read back
  /// opens a sink on the same table), or why there is none. Unbounded text
  /// gets `unbounded_text_bytes`.
  CatalogColumn (*schema_column)(const std::vector<std::optional<std::string>>& row,
                                 std::uint32_t unbounded_text_bytes) = nullptr;

  /// The longest name the database keeps, in bytes, for the table, its
  /// columns and the seals' tables (PostgreSQL: 63, longer ones it cuts
  /// silently; MySQL: 64, longer ones it refuses). 0: no limit (SQLite).
  /// (Last, so that a dialect initialised member by member before it was
  /// added still compiles.)
  std::size_t max_identifier_bytes = 0;

  /// `identifier` quoted, with any quote character in it doubled. Descriptor
  /// names are plain identifiers already (checked at compile time);
  /// quoting keeps keywords usable as names.
  std::string quote(std::string_view identifier) const;
  /// The type a new table gives `column`.
  std::string column_type(const Column& column) const;
  /// The accepted_types entry for `column`.
  std::string_view accepted_types_of(const Column& column) const;
  /// The query for the table's columns (columns_query, or the one on
  /// information_schema.columns).
  std::string table_columns_query() const;
  /// The statement that adds `column` to `table` (unquoted name), nullable:
  /// what the table check prints for a missing column and runs with
  /// migrate=add_columns.
  std::string add_column(std::string_view table, const Column& column) const;
};

/// Where the `?` placeholders of `sql` are (byte offsets): every `?` outside
/// string literals, quoted identifiers and comments. `mysql_lexing`: MySQL's
/// rules (backslash escapes in '...' and "..." strings, backquoted names,
/// `#` comments); otherwise standard SQL's ('...' with '' doubled, E'...'
/// with backslash escapes, "..." names, PostgreSQL's $tag$...$tag$ strings).
AUDITPIPE_EXPORT std::vector<std::size_t> sql_placeholders(std::string_view sql, bool mysql_lexing);

/// The value of a catalog's column default when it is a plain literal: a
/// quoted string (unquoted: '' and, with `backslash_escapes`, backslash
/// escapes undone), a number, TRUE or FALSE, each possibly in parentheses
/// and followed by PostgreSQL's casts (two colons and a type name, which
/// PostgreSQL adds to the literal defaults it reports). nullopt for
/// NULL and for anything computed (now(), nextval(...), CURRENT_TIMESTAMP,
/// an expression): what a loader could not put in as the same value.
AUDITPIPE_EXPORT std::optional<std::string> sql_literal_value(std::string_view expression,
                                                              bool backslash_escapes);

/// Whether a catalog's column default is computed by the database (now(),
/// nextval(...), CURRENT_TIMESTAMP, any expression): neither a literal
/// (sql_literal_value) nor NULL.
AUDITPIPE_EXPORT bool sql_default_is_computed(std::string_view expression, bool backslash_escapes);

/// A table's statement pieces in one dialect.
struct AUDITPIPE_EXPORT SqlTableText {
  std::string table;             ///< the quoted table name
  std::string columns;           ///< quoted record columns, then source_id, seq; comma-separated
  std::size_t column_count = 0;  ///< record columns + 2
  std::string insert_head;       ///< INSERT INTO table (columns) VALUES
  std::string insert_tail;       ///< the dialect's idempotent ending, with a leading space
  std::string create_table;      ///< CREATE TABLE IF NOT EXISTS ..., from the descriptor

  /// insert_head (?,?,...,?) insert_tail: one row of positional parameters.
  std::string single_row_insert() const;
};

/// The SQL text of `table` in `dialect`.
AUDITPIPE_EXPORT SqlTableText sql_table_text(const SqlDialect& dialect,
                                             const TableDescriptor& table);

}  // namespace auditpipe
