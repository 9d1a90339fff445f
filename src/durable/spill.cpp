#include "durable/spill.h"

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "common/descriptor_fingerprint.h"
#include "durable/spill_format.h"

namespace auditpipe::internal {

Spill::Spill(const Options& options, const TableDescriptor& table, Counters& counters,
             const RecordFinisher& finisher)
    : table_(table),
      fingerprint_(fingerprint(table)),
      fsync_interval_(options.spill_fsync_interval),
      counters_(counters),
      finisher_(finisher),
      writer_(options.spill_path, table, fingerprint_, options.spill_max_bytes,
              options.spill_segment_bytes) {}

bool Spill::append_overflow(std::int64_t source_id, std::int64_t seq, std::byte* record) noexcept {
  finisher_.finish(record);
  const RecordRef ref{source_id, seq, record};
  if (writer_.append(std::span(&ref, 1)) == SpillWriter::Result::ok) {
    counters_.spilled.fetch_add(1, std::memory_order_relaxed);
    refusing_.store(false, std::memory_order_relaxed);
    return true;
  }
  counters_.spill_refused.fetch_add(1, std::memory_order_relaxed);
  if (!refusing_.exchange(true, std::memory_order_relaxed)) {
    diagnostics()->error(
        "auditpipe: cannot spill ({}); records wait for pool slots instead, up to max_wait",
        writer_.last_error());
  }
  return false;
}

std::size_t Spill::keep(std::span<const RecordRef> records, std::size_t chunk) {
  std::size_t kept = 0;
  while (kept < records.size()) {
    const std::size_t n = std::min(chunk, records.size() - kept);
    if (writer_.append(records.subspan(kept, n)) == SpillWriter::Result::ok) {
      kept += n;
      continue;
    }
    // A chunk past the cap (or the room left on the disk) may fit in
    // halves: every record kept here is one not lost. (A failed append
    // leaves nothing behind.)
    if (n > 1) {
      chunk = n / 2;
      continue;
    }
    diagnostics()->error("auditpipe: close could not spill: {}", writer_.last_error());
    break;
  }
  counters_.spilled.fetch_add(kept, std::memory_order_relaxed);
  return kept;
}

bool Spill::pending() const {
  return writer_.bytes() > segment_header_size;
}

bool Spill::open_next_segment() {
  auto segments = writer_.sealed_segments();
  if (segments.empty()) {
    if (!writer_.has_unsealed_records()) return false;
    writer_.seal();
    segments = writer_.sealed_segments();
    if (segments.empty()) return false;
  }
  reader_path_ = segments.front();
  // Shorter than its header: a crash as the segment was made, before any
  // record (records follow the header). Nothing to replay, nothing damaged.
  if (std::error_code ec;
      std::filesystem::file_size(reader_path_, ec) < segment_header_size && !ec) {
    diagnostics()->info(
        "auditpipe: spill segment {} holds no record (a crash as it was made): removed",
        reader_path_.string());
    writer_.remove(reader_path_);
    return true;
  }
  try {
    reader_ = std::make_unique<SpillReader>(reader_path_, writer_.codec());
  } catch (const std::exception& e) {
    diagnostics()->error("auditpipe: {}; set aside as {}.bad", e.what(), reader_path_.string());
    writer_.quarantine(reader_path_);
    counters_.spill_bad_segments.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  replayed_in_segment_ = 0;
  if (!reader_->header_valid() || reader_->fingerprint() != fingerprint_ ||
      reader_->record_size() != table_.record_size) {
    diagnostics()->error(
        "auditpipe: spill segment {} has a damaged header or was written for another record "
        "layout; set aside as {}.bad, not replayed",
        reader_path_.string(), reader_path_.string());
    reader_.reset();
    writer_.quarantine(reader_path_);
    counters_.spill_bad_segments.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // An earlier replay stored this many of its records before it stopped:
  // read past them (they are already out of the count).
  const std::uint64_t done = read_replay_progress(reader_path_);
  while (replayed_in_segment_ < done) {
    const std::size_t n = reader_->next(
        static_cast<std::size_t>(std::min<std::uint64_t>(done - replayed_in_segment_, 4096)),
        replay_refs_);
    if (n == 0) break;
    replayed_in_segment_ += n;
  }
  return true;
}

void Spill::stop_replay() {
  if (reader_ && replayed_in_segment_ != 0 &&
      !write_replay_progress(reader_path_, replayed_in_segment_)) {
    diagnostics()->warn(
        "auditpipe: cannot note how far the replay of {} got; its first {} records will be "
        "replayed again (harmless: they are skipped by their key)",
        reader_path_.string(), replayed_in_segment_);
  }
  reader_.reset();
}

void Spill::seal() {
  stop_replay();
  writer_.seal();
  writer_.release_directory();
}

bool Spill::replay_some(std::size_t max, const Write& write) {
  if (writer_.gone()) {
    reader_.reset();  // its records were counted lost with the directory
    return false;
  }
  if (!reader_) {
    if (!open_next_segment()) return false;
    if (!reader_) return true;  // that segment was set aside
  }
  const std::size_t n = reader_->next(max, replay_refs_);
  if (n == 0) {
    finish_segment();
    return true;
  }
  // The records live in the reader's buffer, which is ours to change.
  const TscClock::Snapshot clock = finisher_.clock();
  for (const RecordRef& r : replay_refs_) finisher_.finish(reader_->writable(r), clock);
  if (!write(replay_refs_)) {
    stop_replay();  // closing: the rest of the segment is replayed next time
    return false;
  }
  replayed_in_segment_ += n;
  writer_.replayed(reader_path_, n);
  return true;
}

void Spill::finish_segment() {
  const std::uint64_t skipped = reader_->skipped_bytes();
  if (skipped != 0) {
    counters_.spill_skipped_bytes.fetch_add(skipped, std::memory_order_relaxed);
    counters_.spill_damaged_regions.fetch_add(reader_->damaged_regions(),
                                              std::memory_order_relaxed);
    diagnostics()->warn(
        "auditpipe: replaying spill segment {} skipped {} damaged bytes in {} places; the "
        "records around them were written",
        reader_path_.string(), skipped, reader_->damaged_regions());
  }
  reader_.reset();
  writer_.remove(reader_path_);
}

}  // namespace auditpipe::internal
