// BatchSizer: how many records a writer's next batch may hold, from how
// long its writes take.
//
// A producer that finds the pool full waits until some writer's batch is
// stored and its slots come back. So under saturation a producer's wait is
// the time between two stored batches, and one write that takes longer
// than max_wait times out every producer waiting for it. The sizer keeps
// each write near a target latency (Options::write_latency_target): a
// write over the target shrinks the next batches at once, in proportion; a
// full batch under it lets them grow, at most twofold per write, towards
// what the last write's rate predicts (a linear prediction, which
// underestimates a larger batch's rate because each statement's fixed cost
// is spread wider, so growth never overshoots by much). A partial batch
// says nothing about larger ones and leaves the limit alone.
//
// Between 1% of the largest batch (at least one record) and the largest.
// A zero target turns it off: every batch may be the largest.
//
// Owned by one BatchWriter; not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace auditpipe::internal {

class BatchSizer {
 public:
  BatchSizer(std::size_t largest, std::chrono::microseconds target) noexcept
      : largest_(largest),
        smallest_(target.count() == 0 ? largest : std::max<std::size_t>(1, largest / 100)),
        target_us_(static_cast<double>(target.count())),
        limit_(smallest_) {}

  std::size_t limit() const noexcept { return limit_; }
  std::size_t largest() const noexcept { return largest_; }

  // A write of `count` records was stored after `latency`.
  void stored(std::size_t count, std::chrono::microseconds latency) noexcept {
    if (smallest_ == largest_ || count == 0) return;
    const double took = std::max<double>(1.0, static_cast<double>(latency.count()));
    // What would have taken the target at this write's rate, with a margin
    // so the next write lands under it rather than on it.
    const double fits = 0.9 * static_cast<double>(count) * target_us_ / took;
    if (took > target_us_) {
      limit_ = clamp(fits);
    } else if (count >= limit_) {
      limit_ = clamp(std::min(fits, 2.0 * static_cast<double>(limit_)));
    }
  }

 private:
  std::size_t clamp(double n) const noexcept {
    return std::clamp(static_cast<std::size_t>(n), smallest_, largest_);
  }

  const std::size_t largest_;
  const std::size_t smallest_;
  const double target_us_;
  std::size_t limit_;
};

}  // namespace auditpipe::internal
