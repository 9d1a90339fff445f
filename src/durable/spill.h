// Spill: the spill directory as one object. It owns both directions of the
// records that could not go to the database when they were committed:
//   overflow  a record that found the pool full (Overflow::spill), or one
//             close() could not write before its deadline, is finished
//             (cycle counts become wall time: a spilled record may be read
//             after a reboot) and appended to the active segment;
//   replay    when the database takes writes again, and at the next start,
//             sealed segments are read back oldest first, written through
//             the caller's write function, and deleted once all of a
//             segment is stored; a segment with a damaged header or another
//             record layout is set aside as *.bad, damage inside one is
//             skipped and counted;
//   upkeep    sync_if_due() fdatasyncs appended data (the housekeeper calls
//             it), so no producer ever waits on the disk's flush;
//   books     bytes() and records(): what the directory holds.
//
// Called by the producer path (append_overflow), one writer (replay_some:
// writer 0, when it has no full batch waiting), the housekeeper
// (sync_if_due) and close() (keep, seal). It knows nothing of the pool.
//
// Thread safety: append_overflow, keep, sync_if_due, seal and the getters
// from any thread; replay_some from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/options.h"
#include "auditpipe/sink/sink.h"
#include "durable/spill_reader.h"
#include "durable/spill_writer.h"
#include "observe/counters.h"
#include "writer/record_finisher.h"

namespace auditpipe::internal {

class Spill {
 public:
  // Writes a span of replayed records to the database; false if it gave up
  // (close() ran out of time), true once every record is stored or refused.
  using Write = std::function<bool(std::span<const RecordRef>)>;

  // Opens (creating) Options::spill_path. Throws auditpipe::error.
  Spill(const Options& options, const TableDescriptor& table, Counters& counters,
        const RecordFinisher& finisher);

  // Finishes `record` and appends it as (source_id, seq). False if the
  // directory refused it (full or failing): counted, and reported once per
  // run of refusals.
  bool append_overflow(std::int64_t source_id, std::int64_t seq, std::byte* record) noexcept;

  // close(): appends finished records in chunks of `chunk`; returns how many
  // (from the front) were kept. Counted as spilled.
  std::size_t keep(std::span<const RecordRef> records, std::size_t chunk);

  // Replays up to `max` spilled records through `write`. False when there
  // was nothing to replay (or `write` gave up).
  bool replay_some(std::size_t max, const Write& write);

  void sync_if_due() { writer_.sync_if_due(fsync_interval_); }
  // False once the directory was removed or moved under the logger (then
  // nothing more is spilled); last_error() says so.
  bool still_in_place() { return writer_.still_in_place(); }
  std::uint64_t take_lost() { return writer_.take_lost(); }
  std::string last_error() const { return writer_.last_error(); }
  // close(), once the writers are gone: seals the active segment, notes
  // how far the replay of a segment got, if it stopped part-way, and lets
  // go of the directory (another logger may use it from now on).
  void seal();
  // In a fork() child: the directory is the parent's (Intake::orphan).
  void let_go_in_fork_child() noexcept { writer_.release_directory_in_fork_child(); }

  std::uint64_t bytes() const { return writer_.bytes(); }
  // Records in the spill directory not yet replayed: appended (by
  // append_overflow and keep), and found in its segments at start, less
  // those replayed. A segment's records that replay skipped as damaged
  // leave the count when that segment is done; until then it counts them.
  std::uint64_t records() const noexcept { return writer_.records(); }
  // The replaying writer should call replay_some(): a segment has more
  // than its header (records to replay, or a replayed segment still to
  // delete). records() says how many records wait.
  bool pending() const;
  std::chrono::milliseconds fsync_interval() const noexcept { return fsync_interval_; }

 private:
  // Opens the oldest sealed segment for replay; false if there is none.
  bool open_next_segment();
  void finish_segment();

  const TableDescriptor& table_;
  const std::uint64_t fingerprint_;
  const std::chrono::milliseconds fsync_interval_;
  Counters& counters_;
  const RecordFinisher& finisher_;
  SpillWriter writer_;
  std::atomic<bool> refusing_{false};  // the last overflow append was refused
  // Replay state (one replaying thread).
  std::unique_ptr<SpillReader> reader_;
  std::filesystem::path reader_path_;
  std::uint64_t replayed_in_segment_ = 0;  // of reader_path_'s records, stored
  std::vector<RecordRef> replay_refs_;
  // The replay of reader_path_ stops here: its progress goes to disk.
  void stop_replay();
};

}  // namespace auditpipe::internal
