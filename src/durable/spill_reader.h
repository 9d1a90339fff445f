// SpillReader: reads the records of one spill segment back, in order.
//
// Damage never stops it and never makes it loop: a frame whose magic,
// length or checksum is wrong, and a torn frame at the end, are skipped by
// scanning forward for the next good frame; what was skipped is counted.
// The file is read in bounded chunks, never loaded whole.
//
// Thread safety: none; one reader per segment, on one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "auditpipe/sink/sink.h"

namespace auditpipe::internal {

class SpillReader {
 public:
  // Opens a segment file; throws auditpipe::error if it cannot be opened.
  explicit SpillReader(const std::filesystem::path& path);
  // Reads from an open descriptor (taking ownership); for tests and fuzzing.
  explicit SpillReader(int fd);
  ~SpillReader();
  SpillReader(const SpillReader&) = delete;
  SpillReader& operator=(const SpillReader&) = delete;

  // Whether the segment header is intact; if not, nothing is read.
  bool header_valid() const noexcept { return header_valid_; }
  std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  std::uint32_t record_size() const noexcept { return record_size_; }

  // Up to `max` records into `out` (cleared first); their bytes stay valid
  // until the next call. Returns the count; 0 once the segment is done.
  std::size_t next(std::size_t max, std::vector<RecordRef>& out);
  // The bytes of a record next() returned, for finishing it in place before
  // it is written: they are the reader's own buffer.
  std::byte* writable(const RecordRef& r) noexcept {
    return buffer_.data() + (r.data - buffer_.data());
  }

  std::uint64_t skipped_bytes() const noexcept { return skipped_bytes_; }
  std::uint64_t damaged_regions() const noexcept { return damaged_regions_; }

 private:
  void read_header();
  // Moves unread bytes to the front and reads more; false at end of file.
  bool refill();
  void skip(std::size_t bytes);

  int fd_;
  bool header_valid_ = false;
  std::uint64_t fingerprint_ = 0;
  std::uint32_t record_size_ = 0;
  std::vector<std::byte> buffer_;
  std::size_t begin_ = 0;  // first unread byte
  std::size_t end_ = 0;    // end of valid bytes
  bool eof_ = false;
  bool in_damage_ = false;
  std::uint64_t skipped_bytes_ = 0;
  std::uint64_t damaged_regions_ = 0;
};

}  // namespace auditpipe::internal
