// SpillWriter: appends records to the spill directory's active segment, and
// keeps the directory's books (its bytes, and its records not yet replayed).
//
// Used when a record cannot go into the pool (Overflow::spill with the pool
// full) and when close() runs out of time with records still unwritten. The
// directory has a size cap; past it, append() refuses, and the caller falls
// back on the other overflow behaviour with the refusal counted. Records are
// written compact (spill_format.h, version 2).
//
// No appender waits on the disk's flush: data is fdatasync'ed by
// sync_if_due(), which the housekeeper calls on the configured interval,
// outside the mutex (on a duplicate of the descriptor, so a rotation meanwhile
// cannot close it under the sync). A segment that is sealed or rotated gets
// its record count written into its header and is handed to the next
// sync_if_due() (or the destructor) to be synced and closed, again outside
// the mutex. Directory listings, deletions and renames happen outside it too.
// What an append still does under the mutex: encode, one write() of the
// frames into the page cache, and when it starts a segment, its open() and
// header write.
//
// Thread safety: all members from any thread (one mutex); records() from any
// thread without it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/sink.h"
#include "durable/owned_file.h"
#include "durable/spill_format.h"

namespace auditpipe::internal {

class SpillWriter {
 public:
  enum class Result { ok, full, failed };

  // Creates the directory if needed and takes stock of the segments in it:
  // their bytes, and their records (from the header of a sealed segment; by
  // reading a segment a crash left open, or estimated from the size of a
  // version-1 segment). A segment of another layout counts no records.
  // Throws auditpipe::error if the directory cannot be used. `table` must
  // outlive the writer.
  SpillWriter(std::filesystem::path dir, const TableDescriptor& table, std::uint64_t fingerprint,
              std::uint64_t max_bytes, std::uint64_t segment_bytes);
  ~SpillWriter();
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;

  // Appends the records, as one write. `full` when the directory's cap
  // would be passed; `failed` on an I/O error (see last_error()).
  Result append(std::span<const RecordRef> records);

  // fdatasync()s the active segment if it has data written more than
  // `interval` ago that is not yet synced, and every segment sealed since
  // the last call; never while holding the mutex.
  void sync_if_due(std::chrono::steady_clock::duration interval);

  // Closes the active segment (if it has records) so it can be replayed;
  // the next append starts a new one.
  void seal();
  // The directory's lock is let go: nothing is written any more (close()).
  void release_directory() noexcept { lock_.file.release(); }
  // In a fork() child (Intake::orphan): the directory is the parent's.
  void release_directory_in_fork_child() noexcept { lock_.file.close_in_fork_child(); }

  // Sealed segments, oldest first.
  std::vector<std::filesystem::path> sealed_segments();
  bool has_unsealed_records();

  // `n` records of a sealed segment were replayed (stored).
  void replayed(const std::filesystem::path& segment, std::uint64_t n);
  // Deletes a replayed segment, or renames an unreadable one to *.bad so it
  // is kept for inspection but never replayed again. Either way its records
  // not counted as replayed leave records(): damage the replay skipped.
  void remove(const std::filesystem::path& segment);
  void quarantine(const std::filesystem::path& segment);

  std::uint64_t bytes() const;
  // Records in the directory's segments not yet replayed.
  std::uint64_t records() const noexcept { return records_.load(std::memory_order_relaxed); }
  std::string last_error() const;
  // Whether the directory is still where it was opened (its lock file in
  // it). Once it is not (removed or moved under the logger), appends fail:
  // records spilled there would be out of every later start's reach.
  bool still_in_place() AUDITPIPE_EXCLUDES(mutex_);
  // The records the directory held when it was found gone (once).
  std::uint64_t take_lost() AUDITPIPE_EXCLUDES(mutex_);
  bool gone() const AUDITPIPE_EXCLUDES(mutex_);
  const std::filesystem::path& directory() const noexcept { return dir_; }
  const RecordCodec& codec() const noexcept { return codec_; }

 private:
  bool open_segment_locked() AUDITPIPE_REQUIRES(mutex_);
  // Writes the seal into the active segment's header and hands its
  // descriptor to retired_ (or deletes the segment if it has no records).
  void retire_segment_locked() AUDITPIPE_REQUIRES(mutex_);
  // Takes a segment's remaining records off the books.
  void forget_locked(std::uint64_t number) AUDITPIPE_REQUIRES(mutex_);
  std::uint64_t count_records(const std::filesystem::path& segment, std::uint64_t size) const;

  // A lock on the directory (OwnedFile: a file in it) for the writer's life:
  // one logger owns a spill directory. Two on one directory (one Options
  // reused for two loggers) replayed each other's records into their own
  // databases.
  // The directory's `.auditpipe-lock`, held from start to close().
  struct DirectoryLock {
    explicit DirectoryLock(const std::filesystem::path& dir);
    OwnedFile file;
  };

  const std::filesystem::path dir_;
  DirectoryLock lock_;
  const std::filesystem::path lock_path_;
  const RecordCodec codec_;
  const std::uint64_t fingerprint_;
  const std::uint64_t max_bytes_;
  const std::uint64_t segment_bytes_;

  mutable detail::Mutex mutex_;
  int fd_ AUDITPIPE_GUARDED_BY(mutex_) = -1;  // the active segment, or -1
  std::filesystem::path active_ AUDITPIPE_GUARDED_BY(mutex_);
  std::uint64_t active_number_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t active_size_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t active_records_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  // appended to it
  std::uint64_t next_number_ AUDITPIPE_GUARDED_BY(mutex_) = 1;
  std::uint64_t bytes_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  // all segments in the directory
  bool unsynced_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::chrono::steady_clock::time_point unsynced_since_ AUDITPIPE_GUARDED_BY(mutex_){};
  // Sealed segments' descriptors, to be synced and closed by sync_if_due.
  std::vector<int> retired_ AUDITPIPE_GUARDED_BY(mutex_);
  // Records not yet replayed, per segment number (the active one included).
  std::map<std::uint64_t, std::uint64_t> segment_records_ AUDITPIPE_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> records_{0};  // their sum; changed under mutex_
  std::string last_error_ AUDITPIPE_GUARDED_BY(mutex_);
  bool gone_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::uint64_t lost_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::vector<std::byte> buffer_ AUDITPIPE_GUARDED_BY(mutex_);
};

}  // namespace auditpipe::internal
