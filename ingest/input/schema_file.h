// Schema files: a table's name and columns as JSON, read and written.
// Owned by ingest/input; the ingest command reads one given with --schema
// and prints one for --print-schema / inference.
//
//   {"table": "audit_log",
//    "columns": [
//      {"name": "at", "type": "timestamp"},
//      {"name": "user_name", "type": "text", "size": 64, "nullable": true,
//       "default": "nobody", "path": "user.name"}]}
//
// "type" is a name as auditpipe::to_string(ColumnType) prints it; "size" is
// for text columns only (and required for them); "nullable" defaults to
// false; "default" is the value a loader puts in when the input lacks the
// field (a string, number or boolean; kept as text in the input's notation);
// "path" is the input field when it is not the column's name (a JSON dotted
// path or a CSV header), as a --map would give it. Names are checked by
// auditpipe::Schema's constructor, not here.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/schema.h"

namespace auditpipe::ingest {

/// What a schema file says.
struct SchemaFile {
  std::string table;
  std::vector<ColumnSpec> columns;
  /// column = path, for the columns with a "path" (MappingOptions::maps).
  std::vector<std::pair<std::string, std::string>> paths;
};

/// Reads and checks the schema file at `path`. Throws auditpipe::error
/// naming the file, the column (index and name) and what is wrong.
SchemaFile read_schema_file(const std::string& path);
/// The same for JSON text; `origin` names it in messages.
SchemaFile parse_schema_json(std::string_view json, const std::string& origin);

/// A schema file's text for `columns` (pretty: one column per line);
/// `paths` as in SchemaFile.
std::string to_schema_json(std::string_view table, const std::vector<ColumnSpec>& columns,
                           const std::vector<std::pair<std::string, std::string>>& paths = {});

}  // namespace auditpipe::ingest
