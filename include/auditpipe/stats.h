// Stats: a plain snapshot of a logger's counters and distributions.
//
// Every record a producer offers ends up in exactly one of: written,
// spilled (and later replayed), dropped, timed_out, pool_exhausted,
// abandoned, rejected_by_sink, or (only when close() ran out of time and
// there was no spill directory) unwritten. Nothing leaves the pipeline
// without a counter.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <string>
#include "auditpipe/histogram.h"

namespace auditpipe {

// A sink's connection pool (see auditpipe/sink/connection_pool.h), as
// stats() reports it.
struct ConnectionPoolStats {
  std::size_t active = 0;   // lent out
  std::size_t idle = 0;     // open, waiting to be lent
  std::size_t waiting = 0;  // borrowers waiting for a connection
  std::size_t opening = 0;  // connects in flight
  std::uint64_t created = 0;
  std::uint64_t closed = 0;            // counted once the close has finished
  std::uint64_t timeouts = 0;          // acquire() calls that gave up
  std::uint64_t connect_failures = 0;  // factory calls that threw
  std::uint64_t validations = 0;       // pings on lease
  std::uint64_t leaks_reported = 0;
  HistogramSnapshot wait_ns;  // time in acquire()
  std::string last_connect_error;
};

// Whether the database is taking writes.
enum class Health {
  ok,        // the last write succeeded and nothing waits in the spill directory
  degraded,  // writes are failing and being retried, or spilled records wait for replay
  down,      // writes have failed several times in a row
};
std::string_view to_string(Health health) noexcept;

struct Stats {
  // Records.
  std::uint64_t committed = 0;            // commit() returned Status::ok
  std::uint64_t written = 0;              // stored by the sink
  std::uint64_t dropped = 0;              // Overflow::drop, pool full
  std::uint64_t timed_out = 0;            // Overflow::block, no slot within max_wait
  std::uint64_t pool_exhausted = 0;       // Overflow::fail, pool full, caller told
  std::uint64_t abandoned = 0;            // acquired, then released without commit
  std::uint64_t rejected_by_sink = 0;     // the database refused the record itself
  std::uint64_t unwritten = 0;            // committed, still unwritten when close() gave up
  std::uint64_t truncated_fields = 0;     // text fields cut to fit, among written records
  std::uint64_t invalid_utf8_fields = 0;  // text fields repaired (U+FFFD) before writing
  std::uint64_t nul_replaced_fields = 0;  // text fields whose NULs became U+FFFD (PostgreSQL)
  std::uint64_t blocked = 0;              // acquires that had to wait for a slot
  std::uint64_t dead_lettered = 0;        // refused records written to the dead-letter file
  std::uint64_t recovered = 0;            // committed records found in a durable pool at start

  // Spill directory.
  std::uint64_t spilled = 0;                // records written to it
  std::uint64_t replayed = 0;               // spilled records since written to the database
  std::uint64_t spill_refused = 0;          // spills refused: the directory was full or failing
  std::uint64_t spill_bytes = 0;            // on disk now
  std::uint64_t spill_skipped_bytes = 0;    // damaged bytes skipped while replaying
  std::uint64_t spill_damaged_regions = 0;  // places where damage was found
  std::uint64_t spill_bad_segments = 0;     // segments set aside as unreadable (*.bad)

  Health health = Health::ok;

  // Batches.
  std::uint64_t batches = 0;         // successful sink writes
  std::uint64_t write_failures = 0;  // failed sink writes (each retried or split)
  std::uint64_t retries = 0;         // writes that repeated an earlier failed one

  // Pool.
  std::uint64_t pool_capacity = 0;
  std::uint64_t pool_in_use = 0;  // filling, queued or being written

  // The sink's connection pool, if it has one.
  std::optional<ConnectionPoolStats> connection_pool;

  HistogramSnapshot batch_size;        // records per successful write
  HistogramSnapshot write_latency_us;  // duration of successful writes
  HistogramSnapshot producer_wait_ns;  // time blocked in acquire(), blocked ones only
};

// What close() achieved.
struct CloseReport {
  bool drained = false;         // every committed record was written (or refused by the sink)
  std::uint64_t spilled = 0;    // unwritten at the deadline, moved to the spill directory
  std::uint64_t unwritten = 0;  // committed records left unwritten at the deadline (a durable
                                // pool keeps them for the next start)
  Stats stats;
};

}  // namespace auditpipe
