// Cancellation: how an SQL sink's waits on the network are cut short when
// close() runs out of time (Sink::cancel). One per sink. The sink's own
// connect loops wait through wait_for(), which returns as soon as cancel()
// is called (an eventfd the waits poll with their socket), so a connect in
// progress ends within milliseconds instead of at its connect_timeout.
// Statements in flight are cut short by the skeleton itself (sql_sink.h),
// which shuts down the socket of every live connection.
//
// Who may call: the SQL sink skeleton cancels; sinks pass it to their
// connect code.
//
// Thread safety: every call from any thread. cancel() is idempotent.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>

#include "auditpipe/export.h"

namespace auditpipe {

/// Lets a close() that ran out of time end a sink's waits: connects, polls and sleeps wait through
/// wait_for() and return `cancelled` once cancel() is called.
class AUDITPIPE_EXPORT Cancellation {
 public:
  /// The clock of deadlines.
  using clock = std::chrono::steady_clock;
  /// How a wait ended.
  enum class Wait { ready, timed_out, cancelled };

  /// Throws auditpipe::error if the eventfd cannot be made.
  Cancellation();
  ~Cancellation();
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  /// True once cancel() was called.
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  /// From now on every wait_for() returns `cancelled`, at once.
  void cancel() noexcept;

  /// Waits until `fd` reports one of `events` (poll(2)'s; `revents` gets
  /// what it reported), `deadline` passes, or cancel() is called. A
  /// negative `fd` waits only for the deadline or the cancel.
  Wait wait_for(int fd, short events, clock::time_point deadline, short& revents) const noexcept;

 private:
  std::atomic<bool> cancelled_{false};
  int wake_fd_ = -1;  ///< an eventfd, readable once cancelled
};

}  // namespace auditpipe
