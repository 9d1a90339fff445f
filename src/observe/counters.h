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
#include <chrono>
#include <cstdint>
#include <new>

#include <string>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/histogram.h"
#include "auditpipe/stats.h"

namespace auditpipe::internal {

struct Counters {
#define AUDITPIPE_COUNTER(field, metric, meaning) alignas(64) std::atomic<std::uint64_t> field{0};
  AUDITPIPE_STATS_COUNTERS(AUDITPIPE_COUNTER)
#undef AUDITPIPE_COUNTER

  // Consecutive failed writes that make health `down`.
  static constexpr std::uint32_t down_after_failures = 3;
  // Failed writes since the last successful one (any writer): the health.
  alignas(64) std::atomic<std::uint32_t> consecutive_failures{0};
  // The last failure was one no retry can mend (WriteResult::permanent).
  std::atomic<bool> permanent_failure{false};
  // When a write was last stored (steady clock, ns), or the logger started.
  std::atomic<std::int64_t> last_stored_ns{now_ns()};

  static std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Writers: a write failed / succeeded (after failures).
  void write_failed(const std::string& message, bool permanent) noexcept {
    consecutive_failures.fetch_add(1, std::memory_order_acq_rel);
    permanent_failure.store(permanent, std::memory_order_relaxed);
    detail::MutexLock lock(reason_mutex_);
    try {
      reason_ = message;
    } catch (const std::bad_alloc&) {
      reason_ = "out of memory";  // (fits the string's own buffer: no allocation)
    }
  }
  // The logger started without reaching the database: `down` until a
  // write is stored.
  void start_unreachable(const std::string& message) {
    consecutive_failures.store(down_after_failures, std::memory_order_release);
    detail::MutexLock lock(reason_mutex_);
    reason_ = message;
  }
  // Where records are kept beside the database is gone (the spill
  // directory or the durable pool's file removed under the logger): `down`
  // for the rest of the logger's life, saying so.
  void storage_lost(const std::string& message) {
    detail::MutexLock lock(reason_mutex_);
    if (!storage_lost_.empty()) storage_lost_ += "; ";
    storage_lost_ += message;
  }
  // True if there had been failures.
  bool write_succeeded() {
    last_stored_ns.store(now_ns(), std::memory_order_relaxed);
    if (consecutive_failures.exchange(0, std::memory_order_acq_rel) == 0) return false;
    permanent_failure.store(false, std::memory_order_relaxed);
    detail::MutexLock lock(reason_mutex_);
    reason_.clear();
    return true;
  }

  Histogram batch_size;
  Histogram write_latency_us;
  Histogram producer_wait_ns;

  // Copies every listed counter, the histograms and the health into `s`
  // (whose other fields the caller fills). `spill_pending`: spilled records
  // wait for replay. `stalled_after`: no write stored for this long is
  // `down` if `work_waiting()` (asked only then: it may scan the pool).
  template <class WorkWaiting>
  void copy_to(Stats& s, bool spill_pending, std::chrono::nanoseconds stalled_after,
               WorkWaiting work_waiting) const {
#define AUDITPIPE_COPY(field, metric, meaning) s.field = field.load(std::memory_order_relaxed);
    AUDITPIPE_STATS_COUNTERS(AUDITPIPE_COPY)
#undef AUDITPIPE_COPY
    const std::uint32_t failures = consecutive_failures.load(std::memory_order_relaxed);
    const bool permanent = permanent_failure.load(std::memory_order_relaxed);
    s.health = failures >= down_after_failures || (failures > 0 && permanent) ? Health::down
               : failures > 0 || spill_pending                                ? Health::degraded
                                                                              : Health::ok;
    if (failures > 0) {
      detail::MutexLock lock(reason_mutex_);
      s.health_reason = reason_;
    } else if (spill_pending) {
      s.health_reason = "records wait in the spill directory";
    }
    const std::int64_t since = now_ns() - last_stored_ns.load(std::memory_order_relaxed);
    if (since >= stalled_after.count() && work_waiting()) {
      s.health = Health::down;
      // Said beside the spill directory's note too: that alone read as the
      // whole story while a write hung on a stopped server (a trial).
      if (failures == 0 || s.health_reason.empty()) {
        s.health_reason += (s.health_reason.empty() ? "" : "; ") +
                           std::string("no write stored for ") + std::to_string(since / 1'000'000) +
                           " ms while records wait";
      }
    }
    {
      detail::MutexLock lock(reason_mutex_);
      if (!storage_lost_.empty()) {
        s.health = Health::down;
        s.health_reason = storage_lost_ + (s.health_reason.empty() ? "" : "; ") + s.health_reason;
      }
    }
    s.batch_size = batch_size.snapshot();
    s.write_latency_us = write_latency_us.snapshot();
    s.producer_wait_ns = producer_wait_ns.snapshot();
  }

 private:
  mutable detail::Mutex reason_mutex_;
  std::string reason_ AUDITPIPE_GUARDED_BY(reason_mutex_);
  std::string storage_lost_ AUDITPIPE_GUARDED_BY(reason_mutex_);
};

}  // namespace auditpipe::internal
