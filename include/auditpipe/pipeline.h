// Pipeline: the compiled, type-erased engine behind Logger<Record>.
//
// It owns the record pool, the queue, the writer threads and the sink, and
// knows records only as bytes described by a TableDescriptor. Logger<Record>
// is a thin typed door in front of it; most users never name this class.
//
// Lifetime: records handed out and still held when the Pipeline is
// destroyed (a Logger::Handle kept past its Logger) keep the engine behind
// it alive; each can still be committed (refused: Status::closed) or let
// go, and the last one frees the engine. Giving one back while the Pipeline
// is being destroyed, on another thread, is a race like any use of an
// object during its destruction; after the destructor returns it is safe.
//
// Thread safety: acquire/commit/abandon from any number of threads;
// flush/close/stats from any thread, concurrently with producers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/options.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"

namespace auditpipe {

class Sink;  ///< auditpipe/sink/sink.h: where batches go
namespace internal {
struct Producer;  ///< a thread's record source (opaque here)
}  // namespace internal

/// The compiled engine under Logger<Record>: record pool, queue, writers, spill and stats, over a
/// TableDescriptor. Logger is the way to use it.
class AUDITPIPE_EXPORT Pipeline {
 public:
  /// The clock of deadlines.
  using clock = std::chrono::steady_clock;
  /// The longest any wait or deadline is: a longer duration (milliseconds::
  /// max() for "no limit") is taken as this, which the clock's arithmetic
  /// still holds (nanoseconds overflow past 292 years).
  static constexpr std::chrono::hours longest_wait{24 * 365 * 100};
  /// The deadline `timeout` from now, `timeout` capped at longest_wait.
  static clock::time_point deadline_after(std::chrono::milliseconds timeout) noexcept {
    return clock::now() + std::min<std::chrono::milliseconds>(timeout, longest_wait);
  }

  /// How long close() waits for records that are acquired but not yet
  /// committed (a log() in progress takes nanoseconds; a Handle the
  /// application holds may never be committed).
  static constexpr std::chrono::milliseconds uncommitted_grace{100};

  /// Validates the options, opens the sink (which creates or checks the
  /// table) and starts the writers. Throws auditpipe::error on any problem,
  /// before a single record is accepted.
  Pipeline(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options);
  /// The same, for a descriptor that is not a static one (a runtime Schema's):
  /// the engine keeps `keep_alive` (what owns the descriptor) until it is
  /// freed, which may be after this Pipeline, while records are held.
  Pipeline(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options,
           std::shared_ptr<const void> keep_alive);
  /// Closes with Options::close_timeout if close() was not called.
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// A record slot to fill (holding the prototype's bytes), or nullptr with
  /// the reason in *status.
  std::byte* acquire(Status* status) noexcept;
  /// Stamps (source_id, seq) and queues the record for writing.
  Status commit(std::byte* record) noexcept;
  /// Queues the record under the caller's (source_id, seq) instead of the
  /// thread's next one; the thread's seq does not move. The caller keeps
  /// its keys apart from the pipeline's own (Options::source_id_base).
  Status commit(std::byte* record, std::int64_t source_id, std::int64_t seq) noexcept;
  /// Gives back an acquired record without writing it.
  void abandon(std::byte* record) noexcept;

  /// acquire() and commit() for a caller that does both on one thread in
  /// one call (Logger::log): the thread's record source found by the
  /// acquire travels to the commit, which then does not look it up again.
  /// A Claim must not cross threads; a record that may (Logger::Handle)
  /// goes through acquire()/commit().
  struct Claim {
    /// The slot to fill.
    std::byte* record;
    /// The calling thread's record source.
    internal::Producer* source;
  };
  /// acquire(), remembering the thread's record source for commit(const Claim&).
  Claim claim(Status* status) noexcept;
  /// commit() of a claimed record.
  Status commit(const Claim& claim) noexcept;

  /// The engine a record came from, for holders of records (Logger::Handle)
  /// that may outlive this Pipeline; commit/abandon through it stay valid
  /// while the record is held.
  class Engine;
  /// This pipeline's engine.
  Engine* engine() const noexcept { return engine_; }
  /// commit() through an engine (safe after the Pipeline is gone: Status::closed).
  static Status commit(Engine* engine, std::byte* record) noexcept;
  /// commit(record, source_id, seq) through an engine (safe after the Pipeline is gone).
  static Status commit(Engine* engine, std::byte* record, std::int64_t source_id,
                       std::int64_t seq) noexcept;
  /// abandon() through an engine (safe after the Pipeline is gone).
  static void abandon(Engine* engine, std::byte* record) noexcept;

  /// Waits until every record committed before the call is written (or
  /// refused by the sink), or until `deadline`. True if all were.
  bool flush(clock::time_point deadline);
  /// Stops intake, drains until `deadline`, stops the writers and closes the
  /// sink. What could not be written is counted in the report. Records still
  /// being filled are waited for up to uncommitted_grace, then reported as
  /// uncommitted (and abandoned). Safe to call twice (the second call returns
  /// the first report).
  CloseReport close(clock::time_point deadline);

  /// A snapshot of the counters, gauges and histograms.
  Stats stats() const;
  /// The record type's descriptor.
  const TableDescriptor& table() const noexcept;
  /// The options it was made with (validated, defaults filled in).
  const Options& options() const noexcept;

 private:
  Engine* engine_;  ///< owned: freed by the destructor, or by the last held record
};

}  // namespace auditpipe
