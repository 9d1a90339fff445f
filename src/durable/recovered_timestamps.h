// RecoveredTimestamps: reads the fast_now() readings in records a durable
// pool recovered from an earlier run. In the same boot the TSC is the same
// and the current calibration reads them; after a reboot only the one the
// pool's file kept can. Readings that no calibration can read (a file that
// never saved one) become the time of recovery, counted and reported.
//
// Used once, by the pipeline at start, on each recovered record before it
// is queued; the writer finishes the record as usual afterwards.
//
// Thread safety: one thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/timestamp.h"
#include "common/tsc_clock.h"
#include "durable/pool_file.h"

namespace auditpipe::internal {

class RecoveredTimestamps {
 public:
  RecoveredTimestamps(const PoolFile& file, const std::filesystem::path& path,
                      const TableDescriptor& table);
  // Reports the unreadable readings, if any.
  ~RecoveredTimestamps();
  RecoveredTimestamps(const RecoveredTimestamps&) = delete;
  RecoveredTimestamps& operator=(const RecoveredTimestamps&) = delete;

  void resolve(std::byte* record) noexcept;

 private:
  const std::filesystem::path path_;
  std::vector<const Column*> columns_;
  PoolFile::SavedClock saved_;
  TscClock::Snapshot clock_;
  timestamp now_;
  std::size_t unreadable_ = 0;
};

}  // namespace auditpipe::internal
