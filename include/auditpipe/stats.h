// Stats: a plain snapshot of a logger's counters and distributions.
// Nothing leaves the pipeline without a counter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/histogram.h"

namespace auditpipe {

/// A sink's connection pool (see auditpipe/sink/connection_pool.h), as
/// stats() reports it.
struct AUDITPIPE_EXPORT ConnectionPoolStats {
  std::size_t active = 0;   ///< lent out
  std::size_t idle = 0;     ///< open, waiting to be lent
  std::size_t waiting = 0;  ///< borrowers waiting for a connection
  std::size_t opening = 0;  ///< connects in flight
  /// Connections opened.
  std::uint64_t created = 0;
  std::uint64_t closed = 0;            ///< counted once the close has finished
  std::uint64_t timeouts = 0;          ///< acquire() calls that gave up
  std::uint64_t connect_failures = 0;  ///< factory calls that threw
  std::uint64_t validations = 0;       ///< pings on lease
  /// Leases held longer than the leak detection threshold.
  std::uint64_t leaks_reported = 0;
  HistogramSnapshot wait_ns;  ///< time in acquire()
  /// The last failed connect's message (never a password); empty once a
  /// connect succeeded after it.
  std::string last_connect_error;
  /// The server of each open connection, idle or lent ("db2:3306"; on a
  /// cluster: which node each connection is on), sorted; empty entries for
  /// connections that do not say.
  std::vector<std::string> servers;
};

/// Whether the database is taking writes.
enum class Health {
  ok,        ///< the last write succeeded and nothing waits in the spill directory
  degraded,  ///< writes are failing and being retried, or spilled records wait for replay
  down,      ///< writes have failed several times in a row, or cannot succeed as configured,
             ///< or close() left committed records unwritten
};
/// The state's name (ok, degraded, down).
AUDITPIPE_EXPORT std::string_view to_string(Health health) noexcept;

// Every counter of Stats, one line each: X(field, Prometheus name, meaning).
// Stats, the engine's counters and to_prometheus() are all made from this
// list, so a new counter is one line here (and the code that counts it).
// Each is monotonic.
#define AUDITPIPE_STATS_COUNTERS(X)                                                               \
  /* Records. */                                                                                  \
  X(written, "auditpipe_records_written_total", "Records the sink stored from the pool.")         \
  X(dropped, "auditpipe_records_dropped_total",                                                   \
    "Records dropped by Overflow::drop with the pool full.")                                      \
  X(timed_out, "auditpipe_records_timed_out_total",                                               \
    "Records given up after waiting max_wait for a slot.")                                        \
  X(pool_exhausted, "auditpipe_records_pool_exhausted_total",                                     \
    "Records refused to the caller by Overflow::fail.")                                           \
  X(abandoned, "auditpipe_records_abandoned_total",                                               \
    "Records acquired and released without commit.")                                              \
  X(rejected_by_sink, "auditpipe_records_refused_total", "Records the database refused as data.") \
  X(unwritten, "auditpipe_records_unwritten_total",                                               \
    "Committed records close() left unwritten (a durable pool keeps them), or lost with a spill " \
    "directory removed under the logger.")                                                        \
  X(dead_lettered, "auditpipe_records_dead_lettered_total",                                       \
    "Refused records written to the dead-letter file.")                                           \
  X(recovered, "auditpipe_records_recovered_total",                                               \
    "Committed records found in a durable pool at start.")                                        \
  X(blocked, "auditpipe_acquires_blocked_total", "Acquires that waited for a free slot.")         \
  /* Text fields, once per record the writers finish. */                                          \
  X(truncated_fields, "auditpipe_fields_truncated_total",                                         \
    "Text fields cut to fit their column (counted once per record, stored or not).")              \
  X(invalid_utf8_fields, "auditpipe_fields_invalid_utf8_total",                                   \
    "Text fields repaired to valid UTF-8 (U+FFFD).")                                              \
  X(null_text_fields, "auditpipe_fields_null_text_total",                                         \
    "Text fields filled from a null const char*, stored empty.")                                  \
  X(nul_replaced_fields, "auditpipe_fields_nul_replaced_total",                                   \
    "Text fields whose NUL bytes became U+FFFD (PostgreSQL).")                                    \
  /* Spill directory. */                                                                          \
  X(spilled, "auditpipe_records_spilled_total", "Records written to the spill directory.")        \
  X(replayed, "auditpipe_records_replayed_total",                                                 \
    "Spilled records since written to the database.")                                             \
  X(spill_refused, "auditpipe_spill_refused_total",                                               \
    "Spills refused: the directory was full or failing.")                                         \
  X(spill_skipped_bytes, "auditpipe_spill_skipped_bytes_total",                                   \
    "Damaged spill bytes skipped in replay.")                                                     \
  X(spill_damaged_regions, "auditpipe_spill_damaged_regions_total",                               \
    "Places where spill damage was found.")                                                       \
  X(spill_bad_segments, "auditpipe_spill_bad_segments_total",                                     \
    "Spill segments set aside as unreadable (*.bad).")                                            \
  /* Batches. */                                                                                  \
  X(batches, "auditpipe_batches_total", "Batches the sink stored.")                               \
  X(write_failures, "auditpipe_write_failures_total",                                             \
    "Failed sink writes (each retried or split).")                                                \
  X(retries, "auditpipe_write_retries_total", "Sink writes that repeated a failed one.")

/// A sealing sink's chain (README, Tamper-evident tables).
struct AUDITPIPE_EXPORT SealStats {
  /// seal_no of the newest seal this process knows stored: the chain's
  /// length, and what an anchor taken now would name.
  std::uint64_t newest = 0;
  std::uint64_t stored = 0;   ///< seals this process stored
  std::uint64_t pending = 0;  ///< seals of stored batches, not stored yet
};

/// Every record a producer offers ends up in exactly one of: written,
/// spilled (and later replayed), dropped, timed_out, pool_exhausted,
/// abandoned, rejected_by_sink, or (only when close() ran out of time and
/// there was no spill directory, or it was full or failed) unwritten. One
/// exception: records lost with a spill directory removed under the logger
/// are counted in unwritten as well as in spilled (spilled only ever
/// grows). (One offered once close() has begun is refused with
/// Status::closed and counted nowhere.)
struct AUDITPIPE_EXPORT Stats {
  std::uint64_t committed = 0;  ///< commit() returned Status::ok
#define AUDITPIPE_STATS_FIELD(field, metric, meaning) std::uint64_t field = 0;
  AUDITPIPE_STATS_COUNTERS(AUDITPIPE_STATS_FIELD)
#undef AUDITPIPE_STATS_FIELD

  /// Whether the database is taking writes (see Health).
  Health health = Health::ok;
  /// Why health is not ok: the last failed write's message (never a
  /// password), how long nothing was stored, that records wait in the
  /// spill directory, or how many close() left unwritten; empty while
  /// health is ok.
  std::string health_reason;

  /// Gauges.
  std::uint64_t pool_capacity = 0;
  std::uint64_t pool_in_use = 0;  ///< filling, queued or being written
  /// Free slots parked in producer threads' magazines (taken back whenever
  /// another thread would otherwise wait or drop).
  std::uint64_t pool_cached = 0;
  std::uint64_t spill_bytes = 0;    ///< in the spill directory now
  std::uint64_t spill_records = 0;  ///< in the spill directory now, waiting to be written
  /// Options::max_wait, for comparing producer_wait_ns with (an alert on
  /// waits near it needs both).
  std::uint64_t max_wait_ns = 0;

  /// The sink's connection pool, if it has one.
  std::optional<ConnectionPoolStats> connection_pool;
  /// The sink's seals, if it seals (URL option seal=).
  std::optional<SealStats> seals;

  HistogramSnapshot batch_size;        ///< records per successful write
  HistogramSnapshot write_latency_us;  ///< duration of successful writes
  HistogramSnapshot producer_wait_ns;  ///< time blocked in acquire(), blocked ones only
};

/// What close() achieved.
struct AUDITPIPE_EXPORT CloseReport {
  /// Every committed record was written (or refused by the sink), and the
  /// spill directory is empty: nothing is left anywhere.
  bool drained = false;
  std::uint64_t spilled = 0;  ///< unwritten at the deadline, moved to the spill directory
  /// Records in the spill directory when close() returned: those it spilled
  /// plus any spilled earlier and not yet replayed. The next logger on the
  /// directory writes them first.
  std::uint64_t on_disk = 0;
  /// Committed records not known to be stored at the deadline and kept
  /// nowhere else (a durable pool keeps them for the next start). A write
  /// in flight when the deadline cancelled it may still have been stored by
  /// the server: those are counted here too, and any later copy of them
  /// (from a durable pool) is skipped by its key.
  std::uint64_t unwritten = 0;
  /// Records acquired but still not committed when close() stopped waiting
  /// for them (Handles held by the application, a log() in flight), and
  /// those refused or let go since: each counted in abandoned (in `stats`
  /// below and in stats() from then on, whenever its holder gives it back);
  /// a later commit() of one returns Status::closed. close() waits for such
  /// records only briefly (Pipeline::uncommitted_grace), not to its deadline.
  std::uint64_t uncommitted = 0;
  /// The logger's stats when close() returned.
  Stats stats;
};

}  // namespace auditpipe
