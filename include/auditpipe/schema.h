// Schema: a table described at run time, for records whose shape is known
// only when the program runs (a schema file, an existing table, the first
// lines of an input file: `auditpipe ingest`).
//
//   auditpipe::Schema schema("audit_log", {
//       {"at", auditpipe::ColumnType::timestamp},
//       {"user_name", auditpipe::ColumnType::text, 64},
//       {"amount", auditpipe::ColumnType::float64, 0, /*nullable=*/true},
//   });
//   auditpipe::DynamicLogger logger(schema, auditpipe::open(url));
//
// It checks what table() checks at compile time, at construction instead
// (plain SQL identifiers of at most 64 characters, unique names ignoring
// case, source_id and seq reserved, at least one column, text sizes from 1
// byte to 16 MiB), and lays records out as a compiled record type would be:
// each column at its type's alignment, text as fixed_string<N>'s bytes,
// a presence byte per nullable column. The TableDescriptor it yields is what
// the pipeline, the sinks and the spill file work from, exactly as for a
// compiled one.
//
// Thread safety: immutable after construction; share it freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/status.h"  // auditpipe::error, which the constructor throws

namespace auditpipe {

/// One column of a runtime schema, as a schema file or a catalog gives it.
struct AUDITPIPE_EXPORT ColumnSpec {
  /// A plain SQL identifier.
  std::string name;
  /// Its SQL-neutral type.
  ColumnType type = ColumnType::text;
  /// Text: the capacity in bytes (1 .. 16 MiB); 0 for every other type.
  std::uint32_t max_length = 0;
  /// May be SQL NULL.
  bool nullable = false;
  /// What a loader (auditpipe ingest) puts in when its input lacks the
  /// column, as text in the input's own notation (a catalog's column
  /// default, a schema file's "default"); the pipeline itself never reads it.
  std::optional<std::string> default_value = std::nullopt;
  /// Set by Database::read_schema: an insert that leaves the column out gets
  /// a value the database computes (now(), a sequence, IDENTITY,
  /// AUTO_INCREMENT, SQLite's rowid), which no loader can put in itself; a
  /// loader may leave such a column to the database. Nothing else reads it.
  bool filled_by_database = false;
  /// Text: at most this many characters (code points) as well as
  /// max_length's bytes, 0 for no such limit. Database::read_schema sets it
  /// for a column the database sizes in characters (VARCHAR(n): n, with
  /// max_length the bytes n characters can take); values are cut to both.
  std::uint32_t max_chars = 0;
};

/// A table described at run time: validated names, a record layout and the
/// TableDescriptor over it (see the file's comment).
class AUDITPIPE_EXPORT Schema {
 public:
  /// Validates and lays out the record. Throws auditpipe::error naming the
  /// table, the column and what is wrong with it.
  Schema(std::string table, std::vector<ColumnSpec> columns);
  /// Copies own their names and layout; the copy's descriptor points into the copy.
  Schema(const Schema& other);
  /// See the copy constructor.
  Schema& operator=(const Schema& other);
  /// Moves keep the descriptor valid (it points into storage that moves with
  /// it, unchanged). The moved-from Schema describes nothing: an empty name,
  /// no columns, until it is assigned.
  Schema(Schema&& other) noexcept;
  /// See the move constructor.
  Schema& operator=(Schema&& other) noexcept;
  ~Schema();

  /// The descriptor the pipeline and sinks use; valid while this Schema lives.
  const TableDescriptor& descriptor() const noexcept;
  /// The table's name.
  std::string_view table() const noexcept;
  /// The columns as given.
  const std::vector<ColumnSpec>& columns() const noexcept;
  /// The index of the column named `name` (ignoring ASCII case), if any.
  std::optional<std::size_t> find(std::string_view name) const noexcept;

 private:
  struct Layout;
  Layout* layout_;  ///< owned
};

}  // namespace auditpipe
