// RecordReader: cuts a ByteSource's bytes into records (JSON lines, or CSV /
// TSV records, which may span lines inside quotes). Owned by ingest/input;
// the ingest command reads each input through one, and hands the records to
// a RowMapper.
//
// A record's `offset` (its first byte in the decompressed stream) is its
// identity for exactly-once loading: it depends on the bytes alone, never on
// buffer sizes or on where reading started. To resume, the caller calls
// ByteSource::skip_to(offset) and makes a new reader, passing the line
// number there as `first_line`.
//
// Memory: one buffer of max_record_bytes + chunk_bytes (+ padding), made at
// construction; next() never allocates. A record longer than
// max_record_bytes is not buffered: the reader skips to its end and reports
// it as too_long with its first bytes.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "input/byte_source.h"
#include "input/format.h"

namespace auditpipe::ingest {

/// One record as framed; see RecordReader.
struct RawRecord {
  /// What next() found.
  enum class Kind : std::uint8_t {
    record,  ///< a record
    empty,   ///< a blank or whitespace-only line: count it and skip it
    /// longer than max_record_bytes: text is its first bytes (at most 4096);
    /// end_offset is just after its line end (the stream's end if it ended first)
    too_long,
    incomplete,  ///< the stream ended without a line end: text is what there is
  };
  /// The record without its line end (LF or CRLF). Valid until the next call
  /// of next(); followed in memory by at least record_padding readable bytes.
  std::string_view text;
  std::uint64_t offset = 0;      ///< of its first byte in the decompressed stream
  std::uint64_t end_offset = 0;  ///< just after its line end
  std::uint64_t line = 0;        ///< 1-based line number of its first line
  Kind kind = Kind::record;
};

/// Readable bytes after every RawRecord::text (simdjson::SIMDJSON_PADDING).
inline constexpr std::size_t record_padding = 64;

/// Frames records; see the file's comment.
class RecordReader {
 public:
  /// The default size of one read from the source.
  static constexpr std::size_t default_chunk_bytes = 256 * 1024;

  /// Reads `source` from its current position() on. `first_line` is the
  /// line number there; `chunk_bytes` is the size of each read (small in
  /// tests, to exercise boundaries).
  RecordReader(ByteSource& source, Format format, std::size_t max_record_bytes = 1 << 20,
               std::uint64_t first_line = 1, std::size_t chunk_bytes = default_chunk_bytes);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  /// The next record, or false when the source has no more data now. An
  /// `incomplete` record is not consumed: a later call (after the file grew)
  /// reads it again, whole if its end has arrived, or `incomplete` again.
  bool next(RawRecord& out);

  /// The offset just after the last record returned (where to resume).
  std::uint64_t offset() const noexcept;
  /// The line number of the next record.
  std::uint64_t line() const noexcept;
  /// CSV/TSV: the record just returned was cut by the end of the stream
  /// inside a quoted field (a quote never closed), so everything after the
  /// quote went into it.
  bool ended_in_quotes() const noexcept;
  /// CSV/TSV: the record just returned has a quoted field that ran over
  /// line ends and was closed by a quote with text after it (`"a` ... `b"c`):
  /// a stray quote took the lines after it in, not a quoted field.
  bool stray_quote() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace auditpipe::ingest
