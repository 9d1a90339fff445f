// WriterControl: what flush() and close() tell the writer threads, and how
// the writers tell them back that batches were stored.
//
//   urgent    while a flush or close waits, writers hand over partial
//             batches at once instead of waiting for fuller ones;
//   stopping  close() has drained what it could: writers exit once they
//             hold nothing and the queue is empty;
//   give_up   close() ran out of time: writers stop retrying and exit,
//             leaving what they hold committed (spilled or counted after);
//   progress  writers signal each stored batch while someone is urgent.
//
// The flags only ever go from false to true (urgent is a count).
//
// Thread safety: every member from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe::internal {

class WriterControl {
 public:
  using clock = std::chrono::steady_clock;

  bool urgent() const noexcept { return urgent_.load(std::memory_order_acquire) != 0; }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }
  bool giving_up() const noexcept { return give_up_.load(std::memory_order_acquire); }

  // While an UrgentScope lives, writers do not hold partial batches.
  class UrgentScope {
   public:
    explicit UrgentScope(WriterControl& control) : control_(control) {
      control_.urgent_.fetch_add(1, std::memory_order_acq_rel);
    }
    ~UrgentScope() { control_.urgent_.fetch_sub(1, std::memory_order_acq_rel); }
    UrgentScope(const UrgentScope&) = delete;
    UrgentScope& operator=(const UrgentScope&) = delete;

   private:
    WriterControl& control_;
  };

  void stop() noexcept { stopping_.store(true, std::memory_order_release); }

  void give_up() {
    {
      detail::MutexLock lock(give_up_mutex_);
      give_up_.store(true, std::memory_order_relaxed);
    }
    give_up_cv_.notify_all();
  }

  // A writer's backoff sleep; ends early only when close() gives up.
  void sleep_unless_giving_up(clock::time_point deadline) {
    detail::MutexLock lock(give_up_mutex_);
    while (!give_up_.load(std::memory_order_relaxed) &&
           give_up_cv_.wait_until(give_up_mutex_, deadline) != std::cv_status::timeout) {
    }
  }

  // Writers, after each stored batch while urgent().
  void notify_progress() {
    { detail::MutexLock lock(progress_mutex_); }
    progress_cv_.notify_all();
  }
  // flush() and close(): sleep until a writer made progress or `deadline`.
  void wait_progress(clock::time_point deadline) {
    detail::MutexLock lock(progress_mutex_);
    progress_cv_.wait_until(progress_mutex_, deadline);
  }

 private:
  std::atomic<std::uint32_t> urgent_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> give_up_{false};  // written under give_up_mutex_, read anywhere
  detail::Mutex progress_mutex_;
  detail::CondVar progress_cv_;
  detail::Mutex give_up_mutex_;
  detail::CondVar give_up_cv_;
};

}  // namespace auditpipe::internal
