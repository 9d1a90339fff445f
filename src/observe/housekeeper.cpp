#include "observe/housekeeper.h"

#include <algorithm>

#include "auditpipe/diagnostics.h"
#include "common/start_thread.h"

namespace auditpipe::internal {

Housekeeper::~Housekeeper() {
  stop();
}

void Housekeeper::every(clock::duration interval, std::function<void()> chore) {
  chores_.push_back(Chore{interval, std::move(chore), clock::now() + interval});
}

void Housekeeper::start() {
  if (chores_.empty() || thread_.joinable()) return;
  thread_ = start_thread("the housekeeping thread", [this] { run(); });
}

void Housekeeper::stop() {
  if (!thread_.joinable()) return;
  {
    detail::MutexLock lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Housekeeper::run() {
  mark_internal_thread();
  detail::MutexLock lock(mutex_);
  while (!stopping_) {
    clock::time_point next = clock::time_point::max();
    for (const Chore& c : chores_) next = std::min(next, c.due);
    if (clock::now() < next) {
      cv_.wait_until(mutex_, next);
      continue;  // woken by stop(), or early: look again
    }
    const auto now = clock::now();
    for (Chore& c : chores_) {
      if (c.due > now) continue;
      c.due = now + c.interval;
      // Chores run unlocked: stop() must be able to signal during one.
      mutex_.unlock();
      c.run();
      mutex_.lock();
    }
  }
  mutex_.unlock();
  // The last round, so that what the chores keep up to date (the synced
  // spill data, the saved clock) is current when the logger closes.
  for (Chore& c : chores_) c.run();
  mutex_.lock();
}

}  // namespace auditpipe::internal
