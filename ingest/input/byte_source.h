// ByteSource: the decompressed bytes of one input file (or stdin), read in
// pieces with bounded memory. Owned by ingest/input; the ingest command opens
// one per input with open_byte_source() and hands it to a RecordReader.
//
// Compression is detected from the first bytes, never from the name: gzip
// (1f 8b; concatenated members are one stream) and zstd (28 b5 2f fd;
// several frames are one stream). Anything else is read as it is.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auditpipe/status.h"

namespace auditpipe::ingest {

/// Compressed data that does not decompress (a bad block, a wrong
/// checksum): what was decompressed before it was noticed may be wrong too
/// (gzip checks its CRC only at a member's end, zstd at a frame's), from
/// `suspect_from` on: the offset in the decompressed stream where the
/// damaged member or frame began, up to `reached`: the offset of the first
/// byte not handed out (read() never returned it). What came before
/// `suspect_from` was checked.
struct corrupt_data : auditpipe::error {
  corrupt_data(const std::string& what, std::uint64_t from, std::uint64_t to)
      : auditpipe::error(what), suspect_from(from), reached(to) {}
  std::uint64_t suspect_from;
  std::uint64_t reached;
};

/// A stream of (decompressed) bytes; see the file's comment.
class ByteSource {
 public:
  virtual ~ByteSource() = default;

  /// Reads up to `n` bytes into `out`; returns how many. 0 means no more
  /// data now: for a plain file a later call may return more when the file
  /// has grown (follow mode relies on it). Throws auditpipe::error naming
  /// the path on a read error, corrupt_data for corrupt compressed data.
  virtual std::size_t read(char* out, std::size_t n) = 0;

  /// Moves to decompressed byte `offset`: a seek for a plain file, reading
  /// and discarding otherwise (forward only: an offset behind position()
  /// throws). False if the stream ends first (position() is then its end).
  virtual bool skip_to(std::uint64_t offset) = 0;

  /// Decompressed bytes consumed so far (the offset of the next byte read).
  virtual std::uint64_t position() const noexcept = 0;
  /// Bytes read from the file itself (compressed bytes), for progress.
  virtual std::uint64_t input_bytes_read() const noexcept = 0;
  /// The file's size, when it is a regular file (compressed size if compressed).
  virtual std::optional<std::uint64_t> input_size() const = 0;
  /// Whether the bytes are decompressed from gzip or zstd.
  virtual bool compressed() const noexcept = 0;
  /// "gzip", "zstd" or "none".
  virtual std::string_view compression() const noexcept = 0;
  /// The path it was opened with ("-" for stdin).
  virtual const std::string& path() const noexcept = 0;
};

/// Says true when whoever reads should stop waiting for data.
using Interrupt = std::function<bool()>;

/// Opens `path` ("-" is stdin), detecting gzip or zstd from its first bytes.
/// Throws auditpipe::error naming the path and the reason (errno's text).
/// With `interrupt`, a read of a pipe, FIFO or terminal that waits for data
/// looks at it every 100 ms and returns 0 once it says true (compressed
/// data cut short so is not taken for truncated); regular files never wait.
std::unique_ptr<ByteSource> open_byte_source(const std::string& path, Interrupt interrupt = {});

/// The bytes of `data` (not copied: it must outlive the source), with the
/// same detection; for tests and benchmarks. `name` appears in messages.
std::unique_ptr<ByteSource> memory_byte_source(std::string_view data,
                                               std::string name = "<memory>");

}  // namespace auditpipe::ingest
