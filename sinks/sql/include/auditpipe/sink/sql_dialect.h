// SqlDialect: what one database calls the parts of an audit table: how it
// quotes a name, which column type each ColumnType becomes, how a new table
// declares the (source_id, seq) key and what follows its column list, and
// how its idempotent insert skips a record already stored. SqlTableText is
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
#include <string>
#include <string_view>

#include "auditpipe/column.h"

namespace auditpipe {

struct SqlDialect {
  // How the insert skips a record whose (source_id, seq) is already stored,
  // so that a retried batch is never written twice.
  enum class IdempotentInsert {
    // ... ON DUPLICATE KEY UPDATE seq = seq (MySQL). It absorbs a conflict
    // on ANY unique key, so the table check refuses a table with another
    // unique key over written columns: rows conflicting on it would vanish.
    on_duplicate_key_update,
    // ... ON CONFLICT (source_id, seq) DO NOTHING (PostgreSQL, SQLite).
    // Only that key is skipped; a conflict on any other is an error.
    on_conflict_do_nothing,
  };

  char identifier_quote = '"';  // around a name, doubled inside it
  // The type a new table gives the column.
  std::string (*column_type)(const Column& column) = nullptr;
  std::string_view key_column_type = "BIGINT";      // source_id and seq
  std::string_view key_constraint = "PRIMARY KEY";  // or "UNIQUE", over (source_id, seq)
  // After CREATE TABLE's closing parenthesis, with a leading space (engine,
  // charset, STRICT), or empty.
  std::string_view table_options;
  IdempotentInsert idempotent_insert = IdempotentInsert::on_conflict_do_nothing;

  // `identifier` quoted, with any quote character in it doubled. Descriptor
  // names are plain identifiers already (checked at compile time);
  // quoting keeps keywords usable as names.
  std::string quote(std::string_view identifier) const;
};

// A table's statement pieces in one dialect.
struct SqlTableText {
  std::string table;             // the quoted table name
  std::string columns;           // quoted record columns, then source_id, seq; comma-separated
  std::size_t column_count = 0;  // record columns + 2
  std::string insert_head;       // INSERT INTO table (columns) VALUES
  std::string insert_tail;       // the dialect's idempotent ending, with a leading space
  std::string create_table;      // CREATE TABLE IF NOT EXISTS ..., from the descriptor

  // insert_head (?,?,...,?) insert_tail: one row of positional parameters.
  std::string single_row_insert() const;
};

SqlTableText sql_table_text(const SqlDialect& dialect, const TableDescriptor& table);

}  // namespace auditpipe
