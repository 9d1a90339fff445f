// SpillReader: reads the records of one spill segment back, in order.
//
// It reads both versions of the format (spill_format.h): compact records
// (version 2) are decoded into full records starting from the table's
// prototype, whole-slot records (version 1) are copied as they are. Either
// way the records it hands out are normal record bytes of the table.
//
// Damage never stops it and never makes it loop: a frame whose magic,
// length or checksum is wrong, one that does not decode, and a torn frame
// at the end, are skipped by scanning forward for the next good frame;
// what was skipped is counted. The file is read in bounded chunks, never
// loaded whole.
//
// Thread safety: none; one reader per segment, on one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "auditpipe/sink/sink.h"
#include "durable/spill_format.h"

namespace auditpipe::internal {

class SpillReader {
 public:
  // Opens a segment file of `codec`'s table; throws auditpipe::error if it
  // cannot be opened. The codec must outlive the reader.
  SpillReader(const std::filesystem::path& path, const RecordCodec& codec);
  // Reads from an open descriptor (taking ownership); for tests and fuzzing.
  SpillReader(int fd, const RecordCodec& codec);
  ~SpillReader();
  SpillReader(const SpillReader&) = delete;
  SpillReader& operator=(const SpillReader&) = delete;

  // Whether the segment header is intact; if not, nothing is read.
  bool header_valid() const noexcept { return header_valid_; }
  std::uint32_t version() const noexcept { return version_; }
  std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  std::uint32_t record_size() const noexcept { return record_size_; }
  // The record count in the header of a segment sealed cleanly; none for
  // a segment left open (by a crash) or of version 1.
  std::optional<std::uint64_t> sealed_records() const noexcept { return sealed_records_; }

  // Up to `max` records into `out` (cleared first); their bytes stay valid
  // until the next call. Returns the count; 0 once the segment is done, and
  // always 0 if the header is not intact or its record size is not the
  // table's (the caller checks the fingerprint).
  std::size_t next(std::size_t max, std::vector<RecordRef>& out);
  // The bytes of a record next() returned, for finishing it in place before
  // it is written: they are the reader's own buffer.
  std::byte* writable(const RecordRef& r) noexcept {
    return records_.data() + (r.data - records_.data());
  }
  // Reads the rest of the segment as next() would, without decoding into
  // records; returns how many records next() would have returned.
  std::uint64_t count_rest();

  std::uint64_t skipped_bytes() const noexcept { return skipped_bytes_; }
  std::uint64_t damaged_regions() const noexcept { return damaged_regions_; }
  // The bytes of the good frames read so far (their headers included).
  std::uint64_t frame_bytes() const noexcept { return frame_bytes_; }

 private:
  void read_header();
  // Moves unread bytes to the front and reads more; false at end of file.
  bool refill();
  void skip(std::size_t bytes);
  // Finds the next frame whose checksum holds: its payload starts at
  // buffer_[begin_ + frame_header_size] and is `length` bytes; begin_ stays
  // at its header. False at the end of the segment.
  bool next_frame(std::uint32_t& length);
  // Decodes the payload of the frame at begin_ into `record` (null: only
  // checks it); false if it is not a record of the table.
  bool decode(std::uint32_t length, std::byte* record) const noexcept;
  bool usable() const noexcept;

  const RecordCodec& codec_;
  int fd_;
  bool header_valid_ = false;
  std::uint32_t version_ = 0;
  std::uint64_t fingerprint_ = 0;
  std::uint32_t record_size_ = 0;
  std::optional<std::uint64_t> sealed_records_;
  std::uint32_t min_payload_ = 0;  // bounds on a good frame's payload length
  std::uint32_t max_payload_ = 0;
  std::vector<std::byte> buffer_;  // file bytes
  std::size_t begin_ = 0;          // first unread byte
  std::size_t end_ = 0;            // end of valid bytes
  bool eof_ = false;
  bool in_damage_ = false;
  std::vector<std::byte> records_;  // the records next() handed out
  std::size_t stride_ = 0;          // of a record in records_
  std::uint64_t skipped_bytes_ = 0;
  std::uint64_t damaged_regions_ = 0;
  std::uint64_t frame_bytes_ = 0;
};

}  // namespace auditpipe::internal
