// Schema inference: columns guessed from the first records of an input, for
// `auditpipe ingest` without a schema file or an existing table. Owned by
// ingest/input; the ingest command calls it on records it sampled (copied
// out of a RecordReader), then prints or uses the result.
//
// JSON lines: numbers without a fraction -> int64, with one -> float64
// (both seen: float64), true/false -> boolean, strings that are ISO 8601
// timestamps in every sample -> timestamp, anything else (mixed kinds,
// arrays) -> text. Nested objects are flattened: key b inside a becomes
// column a_b with path a.b. CSV/TSV: the first record is the header; fields
// all integers -> int64, numbers -> float64, true/false -> boolean, ISO
// timestamps -> timestamp, else text. Text is sized to the next power of two
// at least twice the longest value seen (16 to 65536 bytes). A field absent,
// null (JSON) or empty (CSV) in some sample is nullable. Names that are not
// plain identifiers are sanitized (other characters -> '_', a leading digit
// gets a '_' before it, at most 64 characters, duplicates ignoring case and
// the reserved source_id/seq get _2, _3...), the original kept as the path.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/schema.h"
#include "input/format.h"

namespace auditpipe::ingest {

/// What infer_columns() found.
struct InferredColumns {
  std::vector<ColumnSpec> columns;
  /// column = path where the input's name differs (MappingOptions::maps).
  std::vector<std::pair<std::string, std::string>> paths;
  /// Samples that did not parse (and were left out): JSON that is not an
  /// object simdjson reads, CSV/TSV lines of another field count.
  std::size_t unparsed = 0;
  /// The first of them: its number among the records looked at (1-based, a
  /// CSV header not counted) and why.
  std::size_t first_unparsed_record = 0;
  std::string first_unparsed_reason;
  /// Why a column's type is not the one its values look like (an integer
  /// beyond int64 makes a column text), one line each.
  std::vector<std::string> notes;
};

/// Infers columns from up to `max_records` of `records` (each one record's
/// text; CSV/TSV: the header first). Throws auditpipe::error if no sample
/// could be used.
InferredColumns infer_columns(const std::vector<std::string>& records, Format format,
                              std::size_t max_records = 1000);

/// `name` made a plain identifier (see the file's comment), not deduplicated.
std::string sanitize_identifier(std::string_view name);

}  // namespace auditpipe::ingest
