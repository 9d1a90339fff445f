// Cancellation (auditpipe/sink/cancellation.h): an eventfd that every wait
// polls beside its socket.
#include "auditpipe/sink/cancellation.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "auditpipe/status.h"

namespace auditpipe {

Cancellation::Cancellation() : wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (wake_fd_ < 0) {
    throw error(std::string("auditpipe: cannot create an eventfd: ") + std::strerror(errno));
  }
}

Cancellation::~Cancellation() {
  close(wake_fd_);
}

void Cancellation::cancel() noexcept {
  if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
  // Never read back: the eventfd stays readable, so every later wait
  // returns at once too.
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

Cancellation::Wait Cancellation::wait_for(int fd, short events, clock::time_point deadline,
                                          short& revents) const noexcept {
  revents = 0;
  while (true) {
    if (cancelled()) return Wait::cancelled;
    const auto now = clock::now();
    if (now >= deadline) return Wait::timed_out;
    // poll() takes milliseconds; a far deadline waits in slices of a
    // minute, which changes nothing but keeps the arithmetic in range.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    const int timeout = static_cast<int>(std::min<long long>(left.count(), 60'000));
    pollfd fds[2] = {{fd, events, 0}, {wake_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, timeout);
    if (n < 0 && errno != EINTR) {
      revents = POLLERR;  // the caller's next call on the socket reports it
      return Wait::ready;
    }
    if (fds[1].revents != 0) return Wait::cancelled;
    if (n > 0 && fds[0].revents != 0) {
      revents = fds[0].revents;
      return Wait::ready;
    }
  }
}

}  // namespace auditpipe
