// PoolFile: the memory-mapped file behind a durable record pool.
//
// Layout: a 4 KiB header page, a table of record sources (source_id and
// next seq of each producer source, so both carry across restarts), then
// the slab of slots, page-aligned. The file is created at its full size
// with its blocks allocated up front (a full disk is an error at start,
// never a SIGBUS on a producer), mapped shared and populated, and locked
// against a second process. Because every store to the slab lands in the
// kernel's page cache, a record whose commit() returned survives the
// process being killed; surviving a crash of the machine itself would take
// an msync per commit, which auditpipe does not do.
//
// The header also keeps the TSC calibration of the run using the file,
// with the boot it belongs to: records hold fast_now() readings until a
// writer converts them, and after a reboot the TSC has restarted, so only
// the saved calibration says what the recovered readings mean.
//
// Thread safety: immutable after construction; the mapped memory is
// synchronized by its users.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/tsc_clock.h"
#include "durable/owned_file.h"
#include "producer/record_pool.h"

namespace auditpipe::internal {

class PoolFile {
 public:
  // Opens or creates `path` for a pool of `capacity` slots of `stride`
  // bytes. A new file numbers its sources from `source_id_base` (random if
  // unset); an existing one keeps its own base, so that its sources go on
  // (a different `source_id_base` is warned of). Throws auditpipe::error
  // if the file belongs to another layout, is in use by another process,
  // or cannot be created.
  PoolFile(const std::filesystem::path& path, std::uint64_t fingerprint, std::size_t capacity,
           std::size_t stride, std::optional<std::int64_t> source_id_base = std::nullopt);
  ~PoolFile();
  PoolFile(const PoolFile&) = delete;
  PoolFile& operator=(const PoolFile&) = delete;

  std::byte* slab() const noexcept { return slab_; }
  // Whether the path still names this file (not removed, moved or replaced
  // under the logger: then its records no longer outlive the process).
  bool still_in_place() const noexcept { return file_.still_at(path_); }
  const std::filesystem::path& path() const noexcept { return path_; }
  // True if the file existed (its slots hold records of an earlier run).
  bool existed() const noexcept { return existed_; }
  SourceTable sources() noexcept;

  // The calibration the file held when it was opened, if any, and whether
  // it was taken during the current boot.
  struct SavedClock {
    bool known = false;
    bool this_boot = false;
    TscClock::Snapshot clock;
  };
  SavedClock earlier_clock() const noexcept { return earlier_clock_; }
  // Keeps `clock` (of this boot) in the file, replacing what it held, so
  // that a crash at any point leaves one whole calibration. Does nothing
  // if `clock` is the one saved last. One caller at a time.
  void save_clock(const TscClock::Snapshot& clock) noexcept;

  // In a fork() child (Intake::orphan): lets go of the child's copies of
  // the parent's file (its descriptor and its shared mapping of the
  // parent's slots). The slots' memory stays, zeroed and the child's own.
  void let_go_in_fork_child() noexcept;

  static constexpr std::size_t max_sources = 4096;

  // Where the calibration lives, and its layout: two copies, the one
  // `whole` names being complete.
  struct ClockCopy {
    char boot_id[40];
    std::uint64_t anchor_tsc;
    std::int64_t anchor_micros;
    double micros_per_tick;
  };
  struct PersistedClock {
    std::atomic<std::uint32_t> whole;  // 1 or 2; 0: none saved
    std::uint32_t unused;
    ClockCopy copies[2];
  };
  static constexpr std::size_t clock_offset = 512;

 private:
  struct Header;
  static std::string remake_for_capacity(OwnedFile& held, const std::filesystem::path& path,
                                         std::size_t slab_offset, std::size_t old_capacity,
                                         std::size_t old_size, std::size_t capacity,
                                         std::size_t stride, std::size_t* carried);

  OwnedFile file_;
  std::filesystem::path path_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::byte* slab_ = nullptr;
  Header* header_ = nullptr;
  bool existed_ = false;
  PersistedClock* clock_ = nullptr;
  SavedClock earlier_clock_;
  char boot_id_[40] = {};
  std::uint64_t saved_anchor_ = 0;
};

}  // namespace auditpipe::internal
