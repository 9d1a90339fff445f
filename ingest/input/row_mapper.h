// RowMapper: one input record (a JSON line, or a CSV/TSV record after its
// header) parsed, mapped onto a runtime schema's columns and converted to
// their types. Owned by ingest/input; the ingest command's loading loop calls
// fill() once per record with a DynamicLogger::Record as the Target.
//
// Mapping: by default column `x` reads JSON key `x` / CSV header `x`.
// MappingOptions::maps gives another path: for JSON a dotted path into
// nested objects ("user.name"), for CSV a header name. MappingOptions::sets
// gives a column one constant value for every record. For each record every
// column is set exactly once:
//   - a field present is converted by the column's type (value_parse.h has
//     the accepted notations); a failure rejects the record with a reason
//     naming the column and the value;
//   - a JSON null or a missing field (CSV: an unquoted empty field) is NULL
//     for a nullable column, else the column's default_value (converted once
//     at construction), else, for CSV text, the empty string, else the record
//     is rejected: missing field "x";
//   - a column the database fills (ColumnSpec::filled_by_database) and the
//     inputs carry is read like any other, and a record without it is
//     rejected (the database gives its default to a load's every row or none);
//   - JSON keys no column reads are ignored, but a value for a column left to
//     the database (MappingOptions::left_to_database) rejects the record;
//     a key a column reads, repeated, rejects the record (which value is
//     meant is not defined; other readers differ);
//   - a text column takes a JSON number, boolean, object or array as JSON
//     text (see Cost); CSV fields are unquoted ("" is one ").
// A JSON line that is not valid UTF-8 (simdjson refuses it) is repaired
// first (U+FFFD for each bad sequence, repaired_lines() counts it); CSV text
// goes through as it is (the writer repairs and counts it).
//
// Cost: simdjson's DOM parser over the reader's buffer in place (it relies
// on RawRecord's padding), reused for every record. Not On-Demand: simdjson
// 3.0's On-Demand is compiled for the build's baseline CPU (its "fallback"
// scalar kernel on a plain x86-64 build), while the DOM parser picks the
// best kernel (haswell, icelake) at run time. No allocation per record in
// steady state (a rejected record's reason, and a JSON object or array
// stored in a text column, aside). A text column taking a JSON number
// stores its shortest form (1.50 becomes 1.5), an object or array its
// minified text. fill() is a template over the Target so the per-column
// calls are direct.
//
// Thread safety: one thread (it owns its parser and scratch buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/schema.h"
#include "auditpipe/timestamp.h"
#include "input/format.h"
#include "input/record_reader.h"

namespace auditpipe::ingest {

/// How input fields reach columns; see RowMapper.
struct MappingOptions {
  /// column = path (JSON: dotted path into nested objects; CSV: a header name).
  std::vector<std::pair<std::string, std::string>> maps;
  /// column = constant, in the input's notation (converted at construction).
  std::vector<std::pair<std::string, std::string>> sets;
  /// Columns the load leaves to the database's default (not among
  /// `columns`): a record that has a non-null value in the field of that
  /// name (JSON: a top-level key no column reads; CSV: a header field) is
  /// rejected rather than its value dropped.
  std::vector<std::string> left_to_database = {};
};

/// One column's value for the current record, as RowMapper converted it.
struct FieldValue {
  enum class Kind : std::uint8_t { null, boolean, integer, float64, time, text };
  Kind kind = Kind::null;
  bool b = false;
  std::int64_t i = 0;
  double d = 0;
  timestamp ts{};
  std::string_view text;  ///< valid until the next fill()
};

/// See the file's comment.
class RowMapper {
 public:
  /// Throws auditpipe::error for a map/set naming no column, a set whose
  /// value does not convert, a default that does not convert, two columns
  /// reading one path.
  RowMapper(const std::vector<ColumnSpec>& columns, Format format, MappingOptions options = {});
  ~RowMapper();
  RowMapper(const RowMapper&) = delete;
  RowMapper& operator=(const RowMapper&) = delete;

  /// A CSV/TSV header record's field names, unquoted (a UTF-8 BOM dropped).
  static std::vector<std::string> header_names(const RawRecord& header, Format format);

  /// CSV/TSV: whether set_header() is still needed.
  bool needs_header() const noexcept;
  /// CSV/TSV: the first record names the fields. Unknown names are ignored;
  /// throws auditpipe::error for a column that no header names and that has
  /// no set, default or NULL to fall back on, or whose name appears twice.
  void set_header(const RawRecord& header);
  /// CSV/TSV, after set_header(): the columns no header field is read into
  /// (NULL or their default in every row), each as `name` or `name (reads
  /// "path")`; a --map naming a field the header lacks shows here.
  std::vector<std::string> unread_columns() const;

  /// Parses `record` and sets every column of `out` once. False (and
  /// `reason`) if the record is refused; `out` is then partly set.
  template <class Target>
  bool fill(const RawRecord& record, Target& out, std::string& reason) {
    if (!convert(record, reason)) return false;
    const std::size_t n = values_.size();
    for (std::size_t c = 0; c < n; ++c) {
      const FieldValue& v = values_[c];
      switch (v.kind) {
        case FieldValue::Kind::null:
          out.set_null(c);
          break;
        case FieldValue::Kind::boolean:
          out.set_bool(c, v.b);
          break;
        case FieldValue::Kind::integer:
          if (!out.set_integer(c, v.i)) {
            out_of_range(c, v.i, reason);
            return false;
          }
          break;
        case FieldValue::Kind::float64:
          out.set_float64(c, v.d);
          break;
        case FieldValue::Kind::time:
          out.set_timestamp(c, v.ts);
          break;
        case FieldValue::Kind::text:
          out.set_text(c, v.text);
          break;
      }
    }
    return true;
  }

  /// JSON lines repaired to valid UTF-8 before parsing.
  std::uint64_t repaired_lines() const noexcept;
  /// The columns it fills, in order.
  const std::vector<ColumnSpec>& columns() const noexcept;

 private:
  struct Impl;
  bool convert(const RawRecord& record, std::string& reason);
  void out_of_range(std::size_t column, std::int64_t value, std::string& reason) const;

  std::unique_ptr<Impl> impl_;
  std::vector<FieldValue> values_;  ///< one per column, reused
};

}  // namespace auditpipe::ingest
