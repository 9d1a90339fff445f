// HostHealth: which hosts of a URL's list a sink's connects try first. A
// host whose connection failed (killed, a Galera node that left the
// primary component, a PostgreSQL standby refusing writes) or that refused
// at connect is tried last for `avoid_for`, so the next connect moves on to
// another host instead of returning to it. Avoiding only reorders: every
// host is still tried.
//
// Who may call: SQL sinks, one per sink, shared by all its connects.
//
// Thread safety: every call from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/export.h"

namespace auditpipe {

/// Which hosts of a URL's list to try first: the list's order (or one host further each time,
/// to spread connections), hosts avoided now last.
class AUDITPIPE_EXPORT HostHealth {
 public:
  /// The clock of avoidance.
  using clock = std::chrono::steady_clock;
  /// How long a host is tried last after avoid().
  static constexpr std::chrono::seconds avoid_for{5};

  /// `hosts`: the list's length. `rotate`: each order() starts one host further (load balancing).
  explicit HostHealth(std::size_t hosts, bool rotate = false);
  /// The indexes of the hosts to try, in order.
  std::vector<std::size_t> order();
  /// `health`'s order, or without one the list's own order of `hosts` hosts.
  static std::vector<std::size_t> order_of(HostHealth* health, std::size_t hosts);
  /// Host `host` is tried last for avoid_for.
  void avoid(std::size_t host);
  /// Host `host` is not avoided any longer.
  void good(std::size_t host);

 private:
  detail::Mutex mutex_;
  std::vector<clock::time_point> avoid_until_ AUDITPIPE_GUARDED_BY(mutex_);
  const bool rotate_;
  std::size_t next_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
};

}  // namespace auditpipe
