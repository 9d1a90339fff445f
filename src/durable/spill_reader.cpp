#include "durable/spill_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "auditpipe/status.h"
#include "common/crc32c.h"

namespace auditpipe::internal {

namespace {
constexpr std::size_t chunk = 1u << 20;
// A record larger than this cannot be in a spill file auditpipe wrote.
constexpr std::uint32_t max_record_size = 1u << 26;
// Records handed out by one next() call at most.
constexpr std::size_t max_batch = std::size_t{1} << 16;
}  // namespace

SpillReader::SpillReader(const std::filesystem::path& path, const RecordCodec& codec)
    : codec_(codec), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) {
    throw error("auditpipe: cannot open spill segment '" + path.string() +
                "': " + std::strerror(errno));
  }
  read_header();
}

SpillReader::SpillReader(int fd, const RecordCodec& codec) : codec_(codec), fd_(fd) {
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
  if (std::memcmp(h.magic, spill_magic, sizeof h.magic) != 0 ||
      (h.version != spill_version && h.version != spill_version_fixed) || h.record_size == 0 ||
      h.record_size > max_record_size) {
    return;
  }
  header_valid_ = true;
  version_ = h.version;
  fingerprint_ = h.fingerprint;
  record_size_ = h.record_size;
  if (version_ == spill_version && (h.seal & sealed_flag) != 0)
    sealed_records_ = h.seal & ~sealed_flag;
  if (version_ == spill_version_fixed) {
    min_payload_ = max_payload_ = static_cast<std::uint32_t>(frame_key_size + record_size_);
  } else {
    min_payload_ = static_cast<std::uint32_t>(frame_key_size + codec_.min_encoded_size());
    max_payload_ = static_cast<std::uint32_t>(frame_key_size + codec_.max_encoded_size());
  }
  const std::size_t frame = frame_header_size + max_payload_;
  if (buffer_.size() < 2 * frame) buffer_.resize(2 * frame);
  const std::size_t align = std::max<std::size_t>(codec_.table().record_align, 1);
  stride_ = (codec_.table().record_size + align - 1) / align * align;
}

bool SpillReader::usable() const noexcept {
  return header_valid_ && record_size_ == codec_.table().record_size;
}

void SpillReader::skip(std::size_t bytes) {
  if (!in_damage_) ++damaged_regions_;
  in_damage_ = true;
  skipped_bytes_ += bytes;
  begin_ += bytes;
}

bool SpillReader::next_frame(std::uint32_t& length) {
  while (true) {
    const std::size_t available = end_ - begin_;
    if (available < frame_header_size) {
      if (refill() && end_ - begin_ > available) continue;
      if (available > 0) skip(available);  // a torn frame at the end
      return false;
    }
    FrameHeader h;
    std::memcpy(&h, buffer_.data() + begin_, sizeof h);
    if (h.magic != frame_magic || h.length < min_payload_ || h.length > max_payload_) {
      skip(1);  // scan forward for the next frame
      continue;
    }
    if (available < frame_header_size + h.length) {
      if (refill() && end_ - begin_ > available) continue;
      skip(1);  // cut by the end of the file: torn, or its length is damaged
      continue;
    }
    if (crc32c(buffer_.data() + begin_ + frame_header_size, h.length) != h.crc) {
      skip(1);
      continue;
    }
    length = h.length;
    return true;
  }
}

bool SpillReader::decode(std::uint32_t length, std::byte* record) const noexcept {
  const std::byte* record_bytes = buffer_.data() + begin_ + frame_header_size + frame_key_size;
  const std::size_t size = length - frame_key_size;
  if (version_ == spill_version_fixed) {
    if (record != nullptr) std::memcpy(record, record_bytes, size);
    return true;
  }
  return codec_.decode({record_bytes, size}, record);
}

std::size_t SpillReader::next(std::size_t max, std::vector<RecordRef>& out) {
  out.clear();
  if (!usable()) return 0;
  max = std::min(max, max_batch);
  if (records_.size() < max * stride_) records_.resize(max * stride_);
  std::uint32_t length = 0;
  while (out.size() < max && next_frame(length)) {
    std::byte* record = records_.data() + out.size() * stride_;
    if (!decode(length, record)) {
      skip(frame_header_size + length);  // a good checksum over bytes that are no record
      continue;
    }
    const std::byte* p = buffer_.data() + begin_ + frame_header_size;
    RecordRef r;
    std::memcpy(&r.source_id, p, 8);
    std::memcpy(&r.seq, p + 8, 8);
    r.data = record;
    out.push_back(r);
    begin_ += frame_header_size + length;
    frame_bytes_ += frame_header_size + length;
    in_damage_ = false;
  }
  return out.size();
}

std::uint64_t SpillReader::count_rest() {
  if (!usable()) return 0;
  std::uint64_t n = 0;
  std::uint32_t length = 0;
  while (next_frame(length)) {
    if (!decode(length, nullptr)) {
      skip(frame_header_size + length);
      continue;
    }
    ++n;
    begin_ += frame_header_size + length;
    frame_bytes_ += frame_header_size + length;
    in_damage_ = false;
  }
  return n;
}

}  // namespace auditpipe::internal
