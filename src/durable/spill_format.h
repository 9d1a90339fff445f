// The spill file format.
//
// A spill directory holds segments named spill-<16 digits>.seg, numbered in
// the order they were started; records are replayed in that order. A
// segment is a 32-byte header, then frames:
//
//   header: "APSPILL1" | u32 version | u32 record size | u64 layout fingerprint | u64 0
//   frame:  u32 magic  | u32 payload length | u32 CRC-32C of payload | u32 0 | payload
//   payload: i64 source_id | i64 seq | record bytes
//
// All integers little-endian (the host's; spill files do not travel). The
// magic lets a reader find the next frame after damage; the CRC and the
// fixed payload length let it tell a frame from damage. Appends are whole
// frames, so a crash leaves at most one torn frame at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace auditpipe::internal {

inline constexpr char spill_magic[8] = {'A', 'P', 'S', 'P', 'I', 'L', 'L', '1'};
inline constexpr std::uint32_t spill_version = 1;
inline constexpr std::uint32_t frame_magic = 0x4D525046;  // "FPRM" in memory order
inline constexpr std::size_t segment_header_size = 32;
inline constexpr std::size_t frame_header_size = 16;
inline constexpr std::size_t frame_key_size = 16;  // source_id and seq

struct SegmentHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t record_size;
  std::uint64_t fingerprint;
  std::uint64_t reserved;
};
static_assert(sizeof(SegmentHeader) == segment_header_size);

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

}  // namespace auditpipe::internal
