// Stats: a plain snapshot of a logger's counters and distributions.
//
// Every record a producer offers ends up in exactly one of: written,
// dropped, timed_out, pool_exhausted, abandoned, rejected_by_sink, or (only
// when close() ran out of time) unwritten. Nothing leaves the pipeline
// without a counter.
#pragma once

#include <cstdint>

#include "auditpipe/histogram.h"

namespace auditpipe {

struct Stats {
  // Records.
  std::uint64_t committed = 0;         // commit() returned Status::ok
  std::uint64_t written = 0;           // stored by the sink
  std::uint64_t dropped = 0;           // Overflow::drop, pool full
  std::uint64_t timed_out = 0;         // Overflow::block, no slot within max_wait
  std::uint64_t pool_exhausted = 0;    // Overflow::fail, pool full, caller told
  std::uint64_t abandoned = 0;         // acquired, then released without commit
  std::uint64_t rejected_by_sink = 0;  // the database refused the record itself
  std::uint64_t unwritten = 0;         // committed, still unwritten when close() gave up
  std::uint64_t truncated_fields = 0;  // text fields cut to fit, among written records
  std::uint64_t blocked = 0;           // acquires that had to wait for a slot

  // Batches.
  std::uint64_t batches = 0;         // successful sink writes
  std::uint64_t write_failures = 0;  // failed sink writes (each retried or split)
  std::uint64_t retries = 0;         // writes that repeated an earlier failed one

  // Pool.
  std::uint64_t pool_capacity = 0;
  std::uint64_t pool_in_use = 0;  // filling, queued or being written

  HistogramSnapshot batch_size;        // records per successful write
  HistogramSnapshot write_latency_us;  // duration of successful writes
  HistogramSnapshot producer_wait_ns;  // time blocked in acquire(), blocked ones only
};

// What close() achieved.
struct CloseReport {
  bool drained = false;         // every committed record was written (or refused by the sink)
  std::uint64_t unwritten = 0;  // committed records left unwritten at the deadline
  Stats stats;
};

}  // namespace auditpipe
