// libFuzzer target: the spill segment reader, and the record decoder behind
// it, on arbitrary bytes. It must never crash, never loop, and account for
// every byte: each one is either part of a frame it returned a record from,
// the header, or counted as skipped. Every record it returns must be one a
// sink may read: decoded text lengths within their columns' capacity.
//
// Input starting with 'V' gets a valid version-2 segment header for the
// fuzzer's table in front of the rest, 'W' a version-1 one, so the fuzzer
// spends its time on frames rather than on finding the header's magic.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "auditpipe/table.h"
#include "durable/spill_format.h"
#include "durable/spill_reader.h"

namespace {

struct FuzzRow {
  std::int64_t id = 0;
  bool flag = false;
  std::uint16_t port = 0;
  double value = 0;
  auditpipe::fixed_string<8> small;
  std::int8_t level = 0;
  auditpipe::fixed_string<40> text;
};

constexpr auto describe(auditpipe::type_tag<FuzzRow>) {
  return auditpipe::table<FuzzRow>(
      "fuzz_log", AUDITPIPE_COLUMN(FuzzRow, id), AUDITPIPE_COLUMN(FuzzRow, flag),
      AUDITPIPE_COLUMN(FuzzRow, port), AUDITPIPE_COLUMN(FuzzRow, value),
      AUDITPIPE_COLUMN(FuzzRow, small), AUDITPIPE_COLUMN(FuzzRow, level),
      AUDITPIPE_COLUMN(FuzzRow, text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace auditpipe::internal;
  const auditpipe::TableDescriptor& table = auditpipe::descriptor_of<FuzzRow>();
  static const RecordCodec codec(table);
  std::vector<std::uint8_t> file;
  if (size >= 1 && (data[0] == 'V' || data[0] == 'W')) {
    SegmentHeader h{};
    std::memcpy(h.magic, spill_magic, sizeof h.magic);
    h.version = data[0] == 'V' ? spill_version : spill_version_fixed;
    h.record_size = table.record_size;
    h.fingerprint = 42;
    file.resize(sizeof h);
    std::memcpy(file.data(), &h, sizeof h);
    file.insert(file.end(), data + 1, data + size);
  } else {
    file.assign(data, data + size);
  }
  const int fd = memfd_create("spill", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (!file.empty() && ::write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) {
    ::close(fd);
    return 0;
  }
  ::lseek(fd, 0, SEEK_SET);
  SpillReader reader(fd, codec);
  std::vector<auditpipe::RecordRef> out;
  for (int round = 0; reader.next(1 + size % 7, out) != 0; ++round) {
    if (round > static_cast<int>(file.size()) + 1) std::abort();  // no progress: a loop
    // Version 1 records are the slots as they were written (a reader of a
    // text column clamps its length); version 2 ones are decoded, checked.
    for (const auto& r : out) {
      if (reader.version() != spill_version) break;
      for (const auto& c : table.columns) {
        if (c.type != auditpipe::ColumnType::text) continue;
        std::uint32_t length;
        std::memcpy(&length, r.data + c.offset + auditpipe::text_layout::size_offset, 4);
        if (length > c.max_length) std::abort();
      }
    }
  }
  if (reader.header_valid() && reader.record_size() == table.record_size) {
    if (segment_header_size + reader.frame_bytes() + reader.skipped_bytes() != file.size())
      std::abort();
  }
  return 0;
}
