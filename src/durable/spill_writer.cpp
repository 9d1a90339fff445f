#include "durable/spill_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "auditpipe/status.h"
#include "common/crc32c.h"
#include "durable/spill_format.h"

namespace auditpipe::internal {

namespace fs = std::filesystem;

std::string segment_name(std::uint64_t number) {
  char name[40];
  std::snprintf(name, sizeof name, "spill-%016llu.seg", static_cast<unsigned long long>(number));
  return name;
}

std::uint64_t segment_number(std::string_view name) {
  constexpr std::string_view prefix = "spill-", suffix = ".seg";
  if (name.size() != prefix.size() + 16 + suffix.size() ||
      name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return 0;
  }
  std::uint64_t n = 0;
  for (char ch : name.substr(prefix.size(), 16)) {
    if (ch < '0' || ch > '9') return 0;
    n = n * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return n;
}

namespace {

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

SpillWriter::SpillWriter(fs::path dir, std::uint64_t fingerprint, std::uint32_t record_size,
                         std::uint64_t max_bytes, std::uint64_t segment_bytes)
    : dir_(std::move(dir)),
      fingerprint_(fingerprint),
      record_size_(record_size),
      max_bytes_(max_bytes),
      segment_bytes_(std::max<std::uint64_t>(segment_bytes, 4096)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw error("auditpipe: cannot use spill directory '" + dir_.string() +
                "': " + (ec ? ec.message() : "not a directory"));
  }
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::uint64_t n = segment_number(entry.path().filename().string());
    if (n == 0) continue;
    next_number_ = std::max(next_number_, n + 1);
    bytes_ += entry.file_size(ec);
  }
  if (ec)
    throw error("auditpipe: cannot read spill directory '" + dir_.string() + "': " + ec.message());
  // A probe write, so a read-only directory is an error at start.
  const fs::path probe = dir_ / ".auditpipe-write-test";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw error("auditpipe: spill directory '" + dir_.string() +
                "' is not writable: " + std::strerror(errno));
  }
  ::close(fd);
  fs::remove(probe, ec);
}

SpillWriter::~SpillWriter() {
  detail::MutexLock lock(mutex_);
  close_segment_locked();
}

bool SpillWriter::open_segment_locked() {
  active_ = dir_ / segment_name(next_number_++);
  fd_ = ::open(active_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    last_error_ = "cannot create " + active_.string() + ": " + std::strerror(errno);
    return false;
  }
  SegmentHeader h{};
  std::memcpy(h.magic, spill_magic, sizeof h.magic);
  h.version = spill_version;
  h.record_size = record_size_;
  h.fingerprint = fingerprint_;
  if (!write_all(fd_, &h, sizeof h)) {
    last_error_ = "cannot write " + active_.string() + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  active_size_ = sizeof h;
  bytes_ += sizeof h;
  active_has_records_ = false;
  return true;
}

void SpillWriter::close_segment_locked() {
  if (fd_ < 0) return;
  ::fdatasync(fd_);
  ::close(fd_);
  fd_ = -1;
  unsynced_ = false;
  if (!active_has_records_) {
    std::error_code ec;
    fs::remove(active_, ec);
    if (!ec) bytes_ -= active_size_;
  }
}

SpillWriter::Result SpillWriter::append(std::span<const RecordRef> records) {
  if (records.empty()) return Result::ok;
  const std::size_t frame = frame_header_size + frame_key_size + record_size_;
  detail::MutexLock lock(mutex_);
  const std::uint64_t needed = records.size() * frame + (fd_ < 0 ? segment_header_size : 0);
  if (bytes_ + needed > max_bytes_) {
    last_error_ = "spill directory '" + dir_.string() + "' reached its cap of " +
                  std::to_string(max_bytes_) + " bytes";
    return Result::full;
  }
  if (fd_ >= 0 && active_size_ >= segment_bytes_) close_segment_locked();
  if (fd_ < 0 && !open_segment_locked()) return Result::failed;
  buffer_.resize(records.size() * frame);
  std::byte* out = buffer_.data();
  for (const RecordRef& r : records) {
    std::byte* payload = out + frame_header_size;
    std::memcpy(payload, &r.source_id, 8);
    std::memcpy(payload + 8, &r.seq, 8);
    std::memcpy(payload + frame_key_size, r.data, record_size_);
    const FrameHeader h{frame_magic, static_cast<std::uint32_t>(frame_key_size + record_size_),
                        crc32c(payload, frame_key_size + record_size_), 0};
    std::memcpy(out, &h, sizeof h);
    out += frame;
  }
  if (!write_all(fd_, buffer_.data(), buffer_.size())) {
    last_error_ = "cannot append to " + active_.string() + ": " + std::strerror(errno);
    // Cut off a partial frame, so the next append starts clean.
    if (::ftruncate(fd_, static_cast<off_t>(active_size_)) != 0) close_segment_locked();
    return Result::failed;
  }
  active_size_ += buffer_.size();
  bytes_ += buffer_.size();
  active_has_records_ = true;
  if (!unsynced_) {
    unsynced_ = true;
    unsynced_since_ = std::chrono::steady_clock::now();
  }
  return Result::ok;
}

void SpillWriter::sync_if_due(std::chrono::steady_clock::duration interval) {
  int fd = -1;
  {
    detail::MutexLock lock(mutex_);
    if (fd_ < 0 || !unsynced_ || std::chrono::steady_clock::now() - unsynced_since_ < interval)
      return;
    unsynced_ = false;
    // A duplicate, so the segment may be rotated (closed) meanwhile.
    fd = ::dup(fd_);
    if (fd < 0) {  // out of descriptors: sync here rather than not at all
      ::fdatasync(fd_);
      return;
    }
  }
  // Outside the lock: producers spilling into a full pool must not wait
  // behind the disk (an fdatasync of seconds of spilled records).
  ::fdatasync(fd);
  ::close(fd);
}

void SpillWriter::seal() {
  detail::MutexLock lock(mutex_);
  if (active_has_records_) close_segment_locked();
}

bool SpillWriter::has_unsealed_records() {
  detail::MutexLock lock(mutex_);
  return fd_ >= 0 && active_has_records_;
}

std::vector<fs::path> SpillWriter::sealed_segments() {
  detail::MutexLock lock(mutex_);
  std::vector<std::pair<std::uint64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::uint64_t n = segment_number(entry.path().filename().string());
    if (n != 0 && !(fd_ >= 0 && entry.path() == active_)) found.emplace_back(n, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [n, p] : found) out.push_back(std::move(p));
  return out;
}

void SpillWriter::remove(const fs::path& segment) {
  detail::MutexLock lock(mutex_);
  std::error_code ec;
  const auto size = fs::file_size(segment, ec);
  if (!ec && fs::remove(segment, ec)) bytes_ -= std::min<std::uint64_t>(bytes_, size);
}

void SpillWriter::quarantine(const fs::path& segment) {
  detail::MutexLock lock(mutex_);
  std::error_code ec;
  const auto size = fs::file_size(segment, ec);
  fs::rename(segment, fs::path(segment.string() + ".bad"), ec);
  if (!ec) bytes_ -= std::min<std::uint64_t>(bytes_, size);
}

std::uint64_t SpillWriter::bytes() const {
  detail::MutexLock lock(mutex_);
  return bytes_;
}

std::string SpillWriter::last_error() const {
  detail::MutexLock lock(mutex_);
  return last_error_;
}

}  // namespace auditpipe::internal
