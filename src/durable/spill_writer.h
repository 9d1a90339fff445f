// SpillWriter: appends records to the spill directory's active segment.
//
// Used when a record cannot go into the pool (Overflow::spill with the pool
// full) and when close() runs out of time with records still unwritten. The
// directory has a size cap; past it, append() refuses, and the caller falls
// back on the other overflow behaviour with the refusal counted. Data is
// fdatasync'ed by sync_if_due(), which a writer thread calls on the
// configured interval, so producers never wait on the disk's flush.
//
// Thread safety: all members from any thread (one mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/sink.h"

namespace auditpipe::internal {

class SpillWriter {
 public:
  enum class Result { ok, full, failed };

  // Creates the directory if needed and takes stock of the segments in it.
  // Throws auditpipe::error if the directory cannot be used.
  SpillWriter(std::filesystem::path dir, std::uint64_t fingerprint, std::uint32_t record_size,
              std::uint64_t max_bytes, std::uint64_t segment_bytes);
  ~SpillWriter();
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;

  // Appends the records, as one write. `full` when the directory's cap
  // would be passed; `failed` on an I/O error (see last_error()).
  Result append(std::span<const RecordRef> records);

  // fdatasync()s the active segment if it has data written more than
  // `interval` ago that is not yet synced.
  void sync_if_due(std::chrono::steady_clock::duration interval);

  // Closes the active segment (if it has records) so it can be replayed;
  // the next append starts a new one.
  void seal();

  // Sealed segments, oldest first.
  std::vector<std::filesystem::path> sealed_segments();
  bool has_unsealed_records();

  // Deletes a replayed segment, or renames an unreadable one to *.bad so it
  // is kept for inspection but never replayed again.
  void remove(const std::filesystem::path& segment);
  void quarantine(const std::filesystem::path& segment);

  std::uint64_t bytes() const;
  std::string last_error() const;
  const std::filesystem::path& directory() const noexcept { return dir_; }

 private:
  bool open_segment_locked() AUDITPIPE_REQUIRES(mutex_);
  void close_segment_locked() AUDITPIPE_REQUIRES(mutex_);

  const std::filesystem::path dir_;
  const std::uint64_t fingerprint_;
  const std::uint32_t record_size_;
  const std::uint64_t max_bytes_;
  const std::uint64_t segment_bytes_;

  mutable detail::Mutex mutex_;
  int fd_ AUDITPIPE_GUARDED_BY(mutex_) = -1;  // the active segment, or -1
  std::filesystem::path active_ AUDITPIPE_GUARDED_BY(mutex_);
  std::uint64_t active_size_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  bool active_has_records_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::uint64_t next_number_ AUDITPIPE_GUARDED_BY(mutex_) = 1;
  std::uint64_t bytes_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  // all segments in the directory
  bool unsynced_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::chrono::steady_clock::time_point unsynced_since_ AUDITPIPE_GUARDED_BY(mutex_){};
  std::string last_error_ AUDITPIPE_GUARDED_BY(mutex_);
  std::vector<std::byte> buffer_ AUDITPIPE_GUARDED_BY(mutex_);
};

}  // namespace auditpipe::internal
