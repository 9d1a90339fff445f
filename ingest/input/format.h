// Format: the input notations `auditpipe ingest` reads (JSON lines, CSV,
// TSV). Owned by ingest/input; any part of the ingest command may use it.
#pragma once

#include <cstdint>
#include <string_view>

namespace auditpipe::ingest {

/// How an input file's records are written.
enum class Format : std::uint8_t {
  jsonl,  ///< one JSON object per line
  csv,    ///< RFC 4180: comma-separated, "quoted" fields with "" escapes, embedded newlines
  tsv,    ///< as csv with a tab between fields (the same quoting rules)
};

/// "jsonl", "csv" or "tsv".
constexpr std::string_view to_string(Format f) noexcept {
  switch (f) {
    case Format::jsonl:
      return "jsonl";
    case Format::csv:
      return "csv";
    case Format::tsv:
      return "tsv";
  }
  return "?";
}

/// The field delimiter of a delimited format (',' or '\t'); 0 for jsonl.
constexpr char delimiter_of(Format f) noexcept {
  return f == Format::csv ? ',' : f == Format::tsv ? '\t' : '\0';
}

}  // namespace auditpipe::ingest
