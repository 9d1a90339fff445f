#include "durable/spill_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "auditpipe/status.h"
#include "common/crc32c.h"
#include "durable/spill_reader.h"

namespace auditpipe::internal {

namespace fs = std::filesystem;

namespace {

bool pwrite_all(int fd, const void* data, std::size_t size, std::uint64_t offset) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

void sync_and_close(int fd) {
  ::fdatasync(fd);
  ::close(fd);
}

}  // namespace

SpillWriter::DirectoryLock::DirectoryLock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw error("auditpipe: cannot use spill directory '" + dir.string() +
                "': " + (ec ? ec.message() : "not a directory"));
  }
  const OwnedFile::Taken taken = file.take(dir / ".auditpipe-lock", O_CREAT, 0600);
  if (taken == OwnedFile::Taken::failed) {
    throw error("auditpipe: spill directory '" + dir.string() +
                (file.lock_failed() ? "' cannot be locked (one logger per directory): "
                                    : "' is not writable: ") +
                std::strerror(file.error()));
  }
  if (taken == OwnedFile::Taken::in_use) {
    throw error("auditpipe: spill directory '" + dir.string() +
                "' is in use by another logger, in this process or another; one logger owns a "
                "spill directory: give each its own spill_path");
  }
}

SpillWriter::SpillWriter(fs::path dir, const TableDescriptor& table, std::uint64_t fingerprint,
                         std::uint64_t max_bytes, std::uint64_t segment_bytes)
    : dir_(std::move(dir)),
      lock_(dir_),
      // Absolute: the process may change its working directory later.
      lock_path_(std::filesystem::absolute(dir_ / ".auditpipe-lock")),
      codec_(table),
      fingerprint_(fingerprint),
      max_bytes_(max_bytes),
      segment_bytes_(std::max<std::uint64_t>(segment_bytes, 4096)) {
  std::error_code ec;
  std::uint64_t records = 0;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::uint64_t n = segment_number(entry.path().filename().string());
    if (n == 0) continue;
    next_number_ = std::max(next_number_, n + 1);
    const std::uint64_t size = entry.file_size(ec);
    if (ec) break;
    bytes_ += size;
    // Less what an earlier replay of it stored before it stopped.
    const std::uint64_t all = count_records(entry.path(), size);
    const std::uint64_t count = all - std::min(all, read_replay_progress(entry.path()));
    segment_records_[n] = count;
    records += count;
  }
  if (ec)
    throw error("auditpipe: cannot read spill directory '" + dir_.string() + "': " + ec.message());
  records_.store(records, std::memory_order_relaxed);
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

std::uint64_t SpillWriter::count_records(const fs::path& segment, std::uint64_t size) const {
  const int fd = ::open(segment.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  SegmentHeader h{};
  const bool read = ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  ::close(fd);
  if (!read || std::memcmp(h.magic, spill_magic, sizeof h.magic) != 0 ||
      h.fingerprint != fingerprint_ || h.record_size != codec_.table().record_size) {
    return 0;  // set aside when its turn comes, never replayed
  }
  if (h.version == spill_version && (h.seal & sealed_flag) != 0) return h.seal & ~sealed_flag;
  if (h.version == spill_version_fixed) {
    // Fixed-size frames: exact unless damaged; what replay finds damaged
    // leaves the count when the segment is done.
    return (size - segment_header_size) / (frame_header_size + frame_key_size + h.record_size);
  }
  if (h.version != spill_version) return 0;
  // Left open by a crash: count its frames as replay will read them.
  try {
    SpillReader reader(segment, codec_);
    return reader.count_rest();
  } catch (const std::exception&) {
    return 0;
  }
}

SpillWriter::~SpillWriter() {
  std::vector<int> retired;
  {
    detail::MutexLock lock(mutex_);
    retire_segment_locked();
    retired.swap(retired_);
  }
  for (int fd : retired) sync_and_close(fd);
}

bool SpillWriter::open_segment_locked() {
  active_number_ = next_number_++;
  active_ = dir_ / segment_name(active_number_);
  fd_ = ::open(active_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    last_error_ = "cannot create " + active_.string() + ": " + std::strerror(errno);
    return false;
  }
  SegmentHeader h{};
  std::memcpy(h.magic, spill_magic, sizeof h.magic);
  h.version = spill_version;
  h.record_size = codec_.table().record_size;
  h.fingerprint = fingerprint_;
  h.seal = 0;
  if (!pwrite_all(fd_, &h, sizeof h, 0)) {
    last_error_ = "cannot write " + active_.string() + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    fs::remove(active_, ec);
    return false;
  }
  active_size_ = sizeof h;
  active_records_ = 0;
  bytes_ += sizeof h;
  segment_records_[active_number_] = 0;
  return true;
}

void SpillWriter::retire_segment_locked() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  unsynced_ = false;
  if (active_records_ == 0) {
    ::close(fd);
    std::error_code ec;
    fs::remove(active_, ec);
    if (!ec) bytes_ -= std::min(bytes_, active_size_);
    segment_records_.erase(active_number_);
    return;
  }
  // The count for the next start; if this write fails, that start counts
  // the frames instead.
  const std::uint64_t seal = sealed_flag | active_records_;
  (void)pwrite_all(fd, &seal, sizeof seal, seal_offset);
  active_records_ = 0;
  try {
    retired_.push_back(fd);
  } catch (...) {
    sync_and_close(fd);  // out of memory: better late under the lock than never
  }
}

bool SpillWriter::still_in_place() {
  if (lock_.file.still_at(lock_path_)) return true;
  detail::MutexLock lock(mutex_);
  if (!gone_) {
    gone_ = true;
    last_error_ = "the spill directory " + dir_.string() +
                  " was removed or moved while the logger ran (records spilled into it are out of "
                  "reach of every later start)";
    // Off the books: nothing waits there for a replay any more (flush()
    // and close() would wait for them to their deadlines).
    lost_ = records_.exchange(0, std::memory_order_relaxed);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    for (const int fd : retired_) ::close(fd);
    retired_.clear();
    segment_records_.clear();
    active_records_ = 0;
    active_size_ = 0;
    bytes_ = 0;
  }
  return false;
}

std::uint64_t SpillWriter::take_lost() {
  detail::MutexLock lock(mutex_);
  return std::exchange(lost_, 0);
}

bool SpillWriter::gone() const {
  detail::MutexLock lock(mutex_);
  return gone_;
}

SpillWriter::Result SpillWriter::append(std::span<const RecordRef> records) {
  if (records.empty()) return Result::ok;
  const std::size_t max_payload = frame_key_size + codec_.max_encoded_size();
  detail::MutexLock lock(mutex_);
  if (gone_) return Result::failed;  // last_error_ says why
  if (fd_ >= 0 && active_size_ >= segment_bytes_) retire_segment_locked();
  if (buffer_.size() < records.size() * (frame_header_size + max_payload))
    buffer_.resize(records.size() * (frame_header_size + max_payload));
  std::byte* out = buffer_.data();
  for (const RecordRef& r : records) {
    std::byte* payload = out + frame_header_size;
    std::memcpy(payload, &r.source_id, 8);
    std::memcpy(payload + 8, &r.seq, 8);
    const std::size_t length = frame_key_size + codec_.encode(r.data, payload + frame_key_size);
    const FrameHeader h{frame_magic, static_cast<std::uint32_t>(length), crc32c(payload, length),
                        0};
    std::memcpy(out, &h, sizeof h);
    out += frame_header_size + length;
  }
  const auto size = static_cast<std::size_t>(out - buffer_.data());
  const std::uint64_t needed = size + (fd_ < 0 ? segment_header_size : 0);
  if (bytes_ + needed > max_bytes_) {
    last_error_ = "spill directory '" + dir_.string() + "' reached its cap of " +
                  std::to_string(max_bytes_) + " bytes";
    return Result::full;
  }
  if (fd_ < 0 && !open_segment_locked()) return Result::failed;
  if (!pwrite_all(fd_, buffer_.data(), size, active_size_)) {
    last_error_ = "cannot append to " + active_.string() + ": " + std::strerror(errno);
    // Cut off a partial frame, so the next append starts clean.
    if (::ftruncate(fd_, static_cast<off_t>(active_size_)) != 0) retire_segment_locked();
    return Result::failed;
  }
  active_size_ += size;
  bytes_ += size;
  active_records_ += records.size();
  segment_records_[active_number_] += records.size();
  records_.fetch_add(records.size(), std::memory_order_relaxed);
  if (!unsynced_) {
    unsynced_ = true;
    unsynced_since_ = std::chrono::steady_clock::now();
  }
  return Result::ok;
}

void SpillWriter::sync_if_due(std::chrono::steady_clock::duration interval) {
  std::vector<int> retired;
  int fd = -1;
  {
    detail::MutexLock lock(mutex_);
    retired.swap(retired_);
    if (fd_ >= 0 && unsynced_ && std::chrono::steady_clock::now() - unsynced_since_ >= interval) {
      // A duplicate, so the segment may be rotated (closed) meanwhile. Out
      // of descriptors, the sync waits for the next call, or for the
      // segment's seal: never for the mutex's holders.
      fd = ::dup(fd_);
      if (fd >= 0) unsynced_ = false;
    }
  }
  // Outside the lock: producers spilling into a full pool must not wait
  // behind the disk (an fdatasync of seconds of spilled records).
  for (int r : retired) sync_and_close(r);
  if (fd >= 0) sync_and_close(fd);
}

void SpillWriter::seal() {
  detail::MutexLock lock(mutex_);
  if (active_records_ != 0) retire_segment_locked();
}

bool SpillWriter::has_unsealed_records() {
  detail::MutexLock lock(mutex_);
  return fd_ >= 0 && active_records_ != 0;
}

std::vector<fs::path> SpillWriter::sealed_segments() {
  // Every segment numbered below this is sealed: segments are started in
  // number order, and only the newest is ever active.
  std::uint64_t limit = 0;
  {
    detail::MutexLock lock(mutex_);
    limit = fd_ >= 0 ? active_number_ : next_number_;
  }
  std::vector<std::pair<std::uint64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::uint64_t n = segment_number(entry.path().filename().string());
    if (n != 0 && n < limit) found.emplace_back(n, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  out.reserve(found.size());
  for (auto& [n, p] : found) out.push_back(std::move(p));
  return out;
}

void SpillWriter::forget_locked(std::uint64_t number) {
  const auto it = segment_records_.find(number);
  if (it == segment_records_.end()) return;
  records_.fetch_sub(std::min(it->second, records_.load(std::memory_order_relaxed)),
                     std::memory_order_relaxed);
  segment_records_.erase(it);
}

void SpillWriter::replayed(const fs::path& segment, std::uint64_t n) {
  const std::uint64_t number = segment_number(segment.filename().string());
  detail::MutexLock lock(mutex_);
  const auto it = segment_records_.find(number);
  if (it == segment_records_.end()) return;
  const std::uint64_t d = std::min(n, it->second);
  it->second -= d;
  records_.fetch_sub(d, std::memory_order_relaxed);
}

void SpillWriter::remove(const fs::path& segment) {
  // The file system's work outside the lock: unlinking a large file can
  // take a while, and appenders need the lock.
  std::error_code ec;
  const auto size = fs::file_size(segment, ec);
  const bool removed = !ec && fs::remove(segment, ec);
  std::error_code ignored;
  fs::remove(replay_progress_path(segment), ignored);
  const std::uint64_t number = segment_number(segment.filename().string());
  detail::MutexLock lock(mutex_);
  if (removed) bytes_ -= std::min<std::uint64_t>(bytes_, size);
  forget_locked(number);
}

void SpillWriter::quarantine(const fs::path& segment) {
  std::error_code size_ec, ec;
  const auto size = fs::file_size(segment, size_ec);
  fs::rename(segment, fs::path(segment.string() + ".bad"), ec);
  std::error_code ignored;
  fs::remove(replay_progress_path(segment), ignored);
  const std::uint64_t number = segment_number(segment.filename().string());
  detail::MutexLock lock(mutex_);
  if (!ec && !size_ec) bytes_ -= std::min<std::uint64_t>(bytes_, size);
  forget_locked(number);
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
