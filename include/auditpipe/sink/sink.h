// Sink: where batches of records go (a database, a file, a test double).
//
// A sink sees a batch as the table descriptor plus pointers to record bytes;
// it never sees the user's record type. Sinks live in their own libraries
// (auditpipe::sqlite, auditpipe::mysql, ...); the core depends on none of them.
//
// Thread safety: write() is called from every writer thread at once when
// Options::writers > 1; a sink serializes internally if its target needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/stats.h"

namespace auditpipe {

/// One committed record: its identity and its bytes (laid out as the
/// descriptor says).
struct AUDITPIPE_EXPORT RecordRef {
  /// The producer source that committed it.
  std::int64_t source_id;
  /// Its number within that source, dense from 0.
  std::int64_t seq;
  /// The record's bytes.
  const std::byte* data;
};

/// Records for one write: the table they belong to and their references.
struct AUDITPIPE_EXPORT Batch {
  /// The table all records belong to.
  const TableDescriptor& table;
  /// The records, in commit order per source.
  std::span<const RecordRef> records;
  /// Replayed from the spill directory: records of their sources committed
  /// later may be stored already (and sealed). The SQL sinks keep such a
  /// batch's keys in `<table>_unsealed` before they store it, when sealing.
  bool replayed = false;
};

/// What a Sink::write() achieved; the writer retries, splits or gives up by its kind.
struct AUDITPIPE_EXPORT WriteResult {
  /// How a write ended.
  enum class Kind {
    ok,         ///< every record is stored (or was already: a retried batch)
    transient,  ///< nothing can be assumed stored; retry the same batch later
    rejected,   ///< the target refuses the data itself; retrying will not help
    /// Nothing stored, and no retry can succeed until someone changes the
    /// target's configuration (a missing privilege, a dropped table): the
    /// writer keeps the batch and retries at its slowest, with health `down`
    /// and this message as the reason, instead of retrying quietly.
    permanent,
  };
  /// How the write ended.
  Kind kind = Kind::ok;
  /// Why it failed (never a password); empty on success.
  std::string message;

  /// Everything stored.
  static WriteResult success() { return {}; }
  /// Kind::transient with its reason.
  static WriteResult transient_error(std::string message) {
    return {Kind::transient, std::move(message)};
  }
  /// Kind::rejected with the target's reason.
  static WriteResult rejection(std::string message) { return {Kind::rejected, std::move(message)}; }
  /// Kind::permanent with its reason.
  static WriteResult permanent_error(std::string message) {
    return {Kind::permanent, std::move(message)};
  }
  /// True for Kind::ok.
  bool ok() const noexcept { return kind == Kind::ok; }
};

/// What a sink is told about the pipeline it serves.
struct AUDITPIPE_EXPORT SinkContext {
  unsigned writers = 1;  ///< threads that may call write() at once
  /// The pool is durable (Options::durable_path): a record survives a crash
  /// until write() returns ok for it, and is written again after one. So
  /// write() should return ok only once everything it owes the record is
  /// stored (the SQL sinks' seals, with seal=).
  bool durable_pool = false;
  /// With a durable pool: the records an earlier run left committed in it,
  /// sorted by (source_id, seq). They are written first, before anything
  /// new (so that a sink may tell them from rows nobody wrote: with seal=,
  /// the SQL sinks do not warn of unsealed rows the pool will write and
  /// seal again). Valid during open() only.
  std::span<const RecordRef> recovered;
  /// When Options::source_id_base fixed them and no existing durable pool
  /// file goes on with their numbering (no durable pool, or a new file):
  /// the source ids this run stamps, [fixed_sources_first,
  /// fixed_sources_first + fixed_sources_count). Their records are numbered
  /// from seq 0 again, so rows an earlier run stored under them would make
  /// the new records look like repeats, skipped. A sink that can tell
  /// refuses to start (the SQL sinks do). 0: the ids are this run's own
  /// (random base) or go on from where the pool file left them.
  std::int64_t fixed_sources_first = 0;
  /// How many source ids from fixed_sources_first on (see there); 0: none fixed.
  std::int64_t fixed_sources_count = 0;
  /// Whether the logger starts when open() throws auditpipe::unreachable
  /// (Options::start_while_unreachable). If not, the sink is let go at once:
  /// it need not begin connecting in the background (whose "retrying"
  /// warnings would promise what never comes).
  bool starts_while_unreachable = true;
};

/// Where batches go: the interface every sink (SQL or not) implements. The writers call it;
/// applications only pass one to a Logger.
class AUDITPIPE_EXPORT Sink {
 public:
  virtual ~Sink() = default;

  /// Prepares the target for records of `table` (creating or checking the
  /// table, opening connections). Called once, before any write: a sink
  /// serves one logger, and a second is refused before it calls this (after
  /// an open() that threw, another logger may try again). Throws
  /// auditpipe::error with a message naming the problem; the logger then
  /// fails to start. Throws auditpipe::unreachable when the target cannot be
  /// reached at all: if the logger starts anyway (Options::
  /// start_while_unreachable), the sink must then be usable: write() keeps
  /// trying to reach it (a transient failure until it can), and prepares the
  /// table at first contact (a wrong table is then a permanent failure).
  virtual void open(const TableDescriptor& table, const SinkContext& context) = 0;

  /// Writes one batch as one unit. A batch may be offered again after a
  /// transient failure, so writing must be idempotent on (source_id, seq).
  virtual WriteResult write(const Batch& batch) noexcept = 0;

  /// Releases the target. Called once, after the last write.
  virtual void close() noexcept {}

  /// close() ran out of time: every write() in progress, and every one that
  /// starts later, must return within about 100 ms (as a transient failure),
  /// whatever it waits in: a connection lease, a connect, a statement to a
  /// server that does not answer. Called once, from the closing thread,
  /// while writers may be inside write(); close() follows once they left.
  virtual void cancel() noexcept {}

  /// Where this sink writes, for messages (never includes a password).
  virtual std::string describe() const = 0;

  /// False if the target cannot store a NUL byte in text (PostgreSQL): the
  /// writer then replaces NULs with U+FFFD, counted, before write().
  virtual bool accepts_nul_in_text() const noexcept { return true; }

  /// Writer threads this sink works best with, for Options::writers = 0.
  virtual unsigned preferred_writers() const noexcept { return 1; }

  /// The sink's connection pool, for stats(), if it has one.
  virtual std::optional<ConnectionPoolStats> connection_pool_stats() const { return std::nullopt; }

  /// The sink's seals, for stats(), if it seals.
  virtual std::optional<SealStats> seal_stats() const { return std::nullopt; }
};

}  // namespace auditpipe
