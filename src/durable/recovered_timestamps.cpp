#include "durable/recovered_timestamps.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "auditpipe/diagnostics.h"

namespace auditpipe::internal {

RecoveredTimestamps::RecoveredTimestamps(const PoolFile& file, const std::filesystem::path& path,
                                         const TableDescriptor& table)
    : path_(path), saved_(file.earlier_clock()), now_(timestamp::now()) {
  for (const Column& c : table.columns) {
    if (c.type == ColumnType::timestamp) columns_.push_back(&c);
  }
  if (columns_.empty()) return;
  clock_ =
      saved_.this_boot && timestamp::fast_now_reads_tsc() ? TscClock::snapshot() : saved_.clock;
}

RecoveredTimestamps::~RecoveredTimestamps() {
  if (unreadable_ == 0) return;
  diagnostics()->warn(
      "auditpipe: {} timestamps in records recovered from {} were taken on an earlier boot and "
      "the file holds no clock to read them with; they are set to the time of recovery",
      unreadable_, path_.string());
}

void RecoveredTimestamps::resolve(std::byte* record) noexcept {
  for (const Column* c : columns_) {
    if (is_null(record, *c)) continue;  // a NULL's bytes are nobody's time, nor counted
    timestamp t;
    std::memcpy(&t.micros, record + c->offset, sizeof t.micros);
    if (!t.pending()) continue;
    if (saved_.known) {
      t = clock_.resolve(t);
    } else {
      t = now_;
      ++unreadable_;
    }
    std::memcpy(record + c->offset, &t.micros, sizeof t.micros);
  }
}

}  // namespace auditpipe::internal
