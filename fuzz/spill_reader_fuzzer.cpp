// libFuzzer target: the spill segment reader on arbitrary bytes. It must
// never crash, never loop, and account for every byte: each one is either
// part of a record it returns, the header, or counted as skipped.
//
// Input starting with 'V' gets a valid segment header (record size from
// the next byte) in front of the rest, so the fuzzer spends its time on
// frames rather than on finding the header's magic.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "durable/spill_format.h"
#include "durable/spill_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace auditpipe::internal;
  std::vector<std::uint8_t> file;
  if (size >= 2 && data[0] == 'V') {
    SegmentHeader h{};
    std::memcpy(h.magic, spill_magic, sizeof h.magic);
    h.version = spill_version;
    h.record_size = 1u + data[1] % 64u;
    h.fingerprint = 42;
    file.resize(sizeof h);
    std::memcpy(file.data(), &h, sizeof h);
    file.insert(file.end(), data + 2, data + size);
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
  SpillReader reader(fd);
  std::vector<auditpipe::RecordRef> out;
  std::size_t records = 0;
  for (int round = 0; reader.next(1 + size % 7, out) != 0; ++round) {
    records += out.size();
    if (round > static_cast<int>(file.size()) + 1) std::abort();  // no progress: a loop
  }
  if (reader.header_valid()) {
    const std::size_t frame = frame_header_size + frame_key_size + reader.record_size();
    if (segment_header_size + records * frame + reader.skipped_bytes() != file.size()) std::abort();
  }
  return 0;
}
