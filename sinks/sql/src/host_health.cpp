#include "auditpipe/sink/host_health.h"

#include <algorithm>

namespace auditpipe {

HostHealth::HostHealth(std::size_t hosts, bool rotate) : avoid_until_(hosts), rotate_(rotate) {}

std::vector<std::size_t> HostHealth::order() {
  detail::MutexLock lock(mutex_);
  const std::size_t n = avoid_until_.size();
  const std::size_t first = rotate_ && n > 0 ? next_++ % n : 0;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back((first + i) % n);
  const auto now = clock::now();
  std::stable_partition(out.begin(), out.end(),
                        [&](std::size_t i) AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
                          // Under mutex_ (the lambda runs inside this call).
                          return avoid_until_[i] <= now;
                        });
  return out;
}

std::vector<std::size_t> HostHealth::order_of(HostHealth* health, std::size_t hosts) {
  if (health != nullptr) return health->order();
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < hosts; ++i) out.push_back(i);
  return out;
}

void HostHealth::avoid(std::size_t host) {
  detail::MutexLock lock(mutex_);
  if (host < avoid_until_.size()) avoid_until_[host] = clock::now() + avoid_for;
}

void HostHealth::good(std::size_t host) {
  detail::MutexLock lock(mutex_);
  if (host < avoid_until_.size()) avoid_until_[host] = {};
}

}  // namespace auditpipe
