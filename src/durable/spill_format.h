// The spill file format, and the codec of a record inside it.
//
// A spill directory holds segments named spill-<16 digits>.seg, numbered in
// the order they were started; records are replayed in that order. A
// segment is a 32-byte header, then frames:
//
//   header: "APSPILL1" | u32 version | u32 record size | u64 layout fingerprint | u64 seal
//   frame:  u32 magic  | u32 payload length | u32 CRC-32C of payload | u32 0 | payload
//   payload: i64 source_id | i64 seq | record
//
// Version 2 (written since issue 10): the record is compact, its columns in
// the descriptor's order, each
//   fixed-size column (integers, bool, float64, timestamp): its bytes;
//   text column: varint(length << 1 | has flags), [varint(flag word)],
//                the `length` bytes in use
// A nullable column (auditpipe::nullable<T>) is first a presence byte, 0
// for NULL (nothing follows) or 1, then its value as above. (Descriptors
// without nullable columns encode as before; the layout fingerprint keeps
// a segment from being read under another descriptor.)
// (varint: LEB128, 7 bits a byte, low bits first). Bytes no column owns,
// and text bytes past a field's length, are not stored: a reader starts
// from the table's prototype record. The seal is 0 while the segment is
// being written (and after a crash), and `sealed_flag | record count` once
// it was closed cleanly, so counting the records of a directory at start
// reads one header per segment and scans only a segment a crash left open.
//
// Version 1 (still read): the record is its whole fixed-size slot, record
// size bytes; the seal is always 0.
//
// All integers little-endian (the host's; spill files do not travel). The
// magic lets a reader find the next frame after damage; the CRC and the
// bounds on the payload length let it tell a frame from damage. Appends are
// whole frames, so a crash leaves at most one torn frame at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/column.h"

namespace auditpipe::internal {

inline constexpr char spill_magic[8] = {'A', 'P', 'S', 'P', 'I', 'L', 'L', '1'};
inline constexpr std::uint32_t spill_version = 2;         // what SpillWriter writes
inline constexpr std::uint32_t spill_version_fixed = 1;   // whole-slot records, still read
inline constexpr std::uint32_t frame_magic = 0x4D525046;  // "FPRM" in memory order
inline constexpr std::size_t segment_header_size = 32;
inline constexpr std::size_t frame_header_size = 16;
inline constexpr std::size_t frame_key_size = 16;  // source_id and seq
inline constexpr std::uint64_t sealed_flag = std::uint64_t{1} << 63;

struct SegmentHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t record_size;
  std::uint64_t fingerprint;
  std::uint64_t seal;  // version 2: 0, or sealed_flag | record count
};
static_assert(sizeof(SegmentHeader) == segment_header_size);
inline constexpr std::size_t seal_offset = 24;
static_assert(offsetof(SegmentHeader, seal) == seal_offset);

struct FrameHeader {
  std::uint32_t magic;
  std::uint32_t length;
  std::uint32_t crc;
  std::uint32_t reserved;
};
static_assert(sizeof(FrameHeader) == frame_header_size);

// "spill-0000000000000042.seg"
std::string segment_name(std::uint64_t number);
// The number in a segment's file name, or 0 if it is not one.
std::uint64_t segment_number(std::string_view file_name);

// A segment whose replay stopped part-way (close() ran out of time) gets a
// companion file "<segment>.replayed" holding, in decimal, how many of its
// records (from the start, in replay order) are stored. The next start
// skips those, and does not count them as waiting. A crash before it is
// written means they are replayed again: harmless (the key), only counted
// twice in `replayed`.
std::filesystem::path replay_progress_path(const std::filesystem::path& segment);
// 0 if there is no such file or it does not hold a number.
std::uint64_t read_replay_progress(const std::filesystem::path& segment);
// Written and fdatasync'ed under a temporary name, then renamed over.
bool write_replay_progress(const std::filesystem::path& segment, std::uint64_t records);

// A record of one table in the compact form of version 2, and back.
//
// Thread safety: immutable after construction.
class RecordCodec {
 public:
  explicit RecordCodec(const TableDescriptor& table);

  const TableDescriptor& table() const noexcept { return table_; }
  // No record encodes to more bytes than this.
  std::size_t max_encoded_size() const noexcept { return max_encoded_size_; }
  // And none to fewer than this.
  std::size_t min_encoded_size() const noexcept { return min_encoded_size_; }

  // Writes `record` to `out` (room for max_encoded_size() bytes); returns
  // how many bytes it wrote. A text length past the column's capacity is
  // cut to the capacity, as every reader of the record would read it.
  std::size_t encode(const std::byte* record, std::byte* out) const noexcept;

  // Rebuilds a record from exactly the bytes `in`: the prototype, with
  // every column's stored bytes over it. `record` (record_size bytes) may
  // be null to check `in` only. False, with `record` undefined, if `in` is
  // not the encoding of a record of this table.
  bool decode(std::span<const std::byte> in, std::byte* record) const noexcept;

 private:
  const TableDescriptor& table_;
  std::size_t max_encoded_size_ = 0;
  std::size_t min_encoded_size_ = 0;
};

}  // namespace auditpipe::internal
