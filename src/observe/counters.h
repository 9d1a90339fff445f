// Counters: what the engine counts, as atomics, made from the one list in
// include/auditpipe/stats.h (AUDITPIPE_STATS_COUNTERS), plus the write-side
// distributions and the health input.
//
// Owned by the pipeline; every room that counts gets a reference and bumps
// its own counters with relaxed atomics (they are statistics, ordered by
// nothing). Each counter has a cache line of its own: producers bump some
// on their slow paths, writers others once per batch, and neither should
// slow the other down.
//
// Thread safety: every member from any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "auditpipe/histogram.h"
#include "auditpipe/stats.h"

namespace auditpipe::internal {

struct Counters {
#define AUDITPIPE_COUNTER(field, metric, meaning) alignas(64) std::atomic<std::uint64_t> field{0};
  AUDITPIPE_STATS_COUNTERS(AUDITPIPE_COUNTER)
#undef AUDITPIPE_COUNTER

  // Failed writes since the last successful one (any writer): the health.
  alignas(64) std::atomic<std::uint32_t> consecutive_failures{0};

  Histogram batch_size;
  Histogram write_latency_us;
  Histogram producer_wait_ns;

  // Copies every listed counter, the histograms and the health into `s`
  // (whose other fields the caller fills). `spill_pending`: spilled records
  // wait for replay.
  void copy_to(Stats& s, bool spill_pending) const {
#define AUDITPIPE_COPY(field, metric, meaning) s.field = field.load(std::memory_order_relaxed);
    AUDITPIPE_STATS_COUNTERS(AUDITPIPE_COPY)
#undef AUDITPIPE_COPY
    const std::uint32_t failures = consecutive_failures.load(std::memory_order_relaxed);
    s.health = failures >= 3                   ? Health::down
               : failures > 0 || spill_pending ? Health::degraded
                                               : Health::ok;
    s.batch_size = batch_size.snapshot();
    s.write_latency_us = write_latency_us.snapshot();
    s.producer_wait_ns = producer_wait_ns.snapshot();
  }
};

}  // namespace auditpipe::internal
