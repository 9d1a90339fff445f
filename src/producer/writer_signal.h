// WriterSignal: how producers wake sleeping writers without a system call
// per record.
//
// A writer that goes to sleep with room left in its batch "arms" the signal
// with a target: the pool's acquisition count at which enough new records
// exist to fill its batch. After each commit a producer does one relaxed
// load; only the producer that sees the target reached pays for the wake
// (one futex call per batch, not per record). A missed race only delays a
// record until the writer's flush-interval timeout, never loses it.
//
// Thread safety: all members from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe::internal {

class WriterSignal {
 public:
  using clock = std::chrono::steady_clock;

  // Producer side, after a commit: one relaxed load unless armed.
  template <class Pool>
  void on_commit(const Pool& pool) noexcept {
    if (armed_.load(std::memory_order_relaxed) &&
        static_cast<std::int32_t>(pool.acquisitions() - target_.load(std::memory_order_relaxed)) >=
            0) {
      wake_one();
    }
  }

  // Writer side: wake me once the pool's acquisition count reaches `target`.
  void arm(std::uint32_t target) noexcept {
    target_.store(target, std::memory_order_relaxed);
    armed_.store(true, std::memory_order_seq_cst);
  }
  void disarm() noexcept { armed_.store(false, std::memory_order_relaxed); }

  // Wakes one sleeping writer (if the signal was armed or `force`).
  void wake_one(bool force = false) noexcept {
    if (!armed_.exchange(false, std::memory_order_acq_rel) && !force) return;
    {
      detail::MutexLock lock(mutex_);
      ++pending_;
    }
    cv_.notify_one();
  }

  // Wakes every writer: flush, close and blocked producers use this.
  void wake_all() noexcept {
    armed_.store(false, std::memory_order_relaxed);
    {
      detail::MutexLock lock(mutex_);
      broadcast_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_all();
  }

  // Taken by a writer before it checks whether it has work: a wake_all()
  // after this point ends the wait that follows.
  std::uint64_t epoch() const noexcept { return broadcast_.load(std::memory_order_acquire); }

  // Sleeps until woken (by wake_one, or by wake_all since `epoch`) or
  // `deadline`.
  void wait_until(std::uint64_t epoch, clock::time_point deadline) {
    detail::MutexLock lock(mutex_);
    while (pending_ == 0 && broadcast_.load(std::memory_order_relaxed) == epoch) {
      if (cv_.wait_until(mutex_, deadline) == std::cv_status::timeout) break;
    }
    if (pending_ > 0) --pending_;
  }

 private:
  std::atomic<bool> armed_{false};
  std::atomic<std::uint32_t> target_{0};
  detail::Mutex mutex_;
  detail::CondVar cv_;
  std::uint64_t pending_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  // single wakes not yet taken
  std::atomic<std::uint64_t> broadcast_{0};                 // bumped by wake_all, under mutex_
};

}  // namespace auditpipe::internal
