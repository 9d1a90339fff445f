#include "durable/spill_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "auditpipe/status.h"
#include "common/crc32c.h"
#include "durable/spill_format.h"

namespace auditpipe::internal {

namespace {
constexpr std::size_t chunk = 1u << 20;
// A record larger than this cannot be in a spill file auditpipe wrote.
constexpr std::uint32_t max_record_size = 1u << 26;
}  // namespace

SpillReader::SpillReader(const std::filesystem::path& path)
    : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) {
    throw error("auditpipe: cannot open spill segment '" + path.string() +
                "': " + std::strerror(errno));
  }
  read_header();
}

SpillReader::SpillReader(int fd) : fd_(fd) {
  read_header();
}

SpillReader::~SpillReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool SpillReader::refill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) return true;  // full already
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<std::size_t>(n);
    return true;
  }
}

void SpillReader::read_header() {
  buffer_.resize(chunk);
  refill();
  while (end_ < segment_header_size && refill()) {
  }
  if (end_ - begin_ < segment_header_size) {
    skipped_bytes_ += end_ - begin_;
    begin_ = end_;
    return;
  }
  SegmentHeader h;
  std::memcpy(&h, buffer_.data(), sizeof h);
  begin_ = segment_header_size;
  if (std::memcmp(h.magic, spill_magic, sizeof h.magic) != 0 || h.version != spill_version ||
      h.record_size == 0 || h.record_size > max_record_size) {
    return;
  }
  header_valid_ = true;
  fingerprint_ = h.fingerprint;
  record_size_ = h.record_size;
  const std::size_t frame = frame_header_size + frame_key_size + record_size_;
  if (buffer_.size() < 2 * frame) buffer_.resize(2 * frame);
}

void SpillReader::skip(std::size_t bytes) {
  if (!in_damage_) ++damaged_regions_;
  in_damage_ = true;
  skipped_bytes_ += bytes;
  begin_ += bytes;
}

std::size_t SpillReader::next(std::size_t max, std::vector<RecordRef>& out) {
  out.clear();
  if (!header_valid_) return 0;
  const std::size_t payload = frame_key_size + record_size_;
  const std::size_t frame = frame_header_size + payload;
  // Room for `max` frames at once, so the records handed out stay put.
  if (buffer_.size() < max * frame) buffer_.resize(std::min(max, std::size_t{1} << 16) * frame);
  if (end_ - begin_ < buffer_.size()) refill();
  while (out.size() < max) {
    const std::size_t available = end_ - begin_;
    if (available < frame) {
      if (!out.empty()) break;  // refilling would move the records handed out
      if (refill() && end_ - begin_ > available) continue;
      if (available > 0) skip(available);  // a torn frame at the end
      break;
    }
    const std::byte* p = buffer_.data() + begin_;
    FrameHeader h;
    std::memcpy(&h, p, sizeof h);
    if (h.magic != frame_magic || h.length != payload ||
        crc32c(p + frame_header_size, payload) != h.crc) {
      skip(1);  // scan forward for the next frame
      continue;
    }
    RecordRef r;
    std::memcpy(&r.source_id, p + frame_header_size, 8);
    std::memcpy(&r.seq, p + frame_header_size + 8, 8);
    r.data = p + frame_header_size + frame_key_size;
    out.push_back(r);
    begin_ += frame;
    in_damage_ = false;
  }
  return out.size();
}

}  // namespace auditpipe::internal
