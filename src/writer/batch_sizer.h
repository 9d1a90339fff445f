// BatchSizer: how many records a writer's next batch may hold, from how
// long its writes take.
//
// A producer that finds the pool full waits until some writer's batch is
// stored and its slots come back. So under saturation a producer's wait is
// the time between two stored batches, and one write that takes longer
// than max_wait times out every producer waiting for it. The sizer keeps
// each write near a target latency (Options::write_latency_target).
//
// A write's time is modelled as a fixed cost per statement (the round
// trip, the commit) plus a cost per record. The per-record cost comes from
// each write; the fixed cost from pairs of writes of clearly different
// sizes (smoothed). The limit is what fits the target under that model,
// with a 10% margin: a write over the target shrinks the next batches at
// once; a full batch under it lets them grow, at most twofold per write. A
// partial batch says nothing about larger ones and leaves the limit alone.
// When the fixed cost alone takes most of the target (a distant server),
// smaller batches would only cost throughput without shortening any write:
// then every batch may be the largest.
//
// Starts at a sixteenth of the largest batch; stays between 1% of it (at
// least one record) and the largest.
// A zero target turns it off: every batch may be the largest.
//
// Owned by one BatchWriter; not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

namespace auditpipe::internal {

class BatchSizer {
 public:
  BatchSizer(std::size_t largest, std::chrono::microseconds target) noexcept
      : largest_(largest),
        smallest_(target.count() == 0 ? largest : std::max<std::size_t>(1, largest / 100)),
        target_us_(static_cast<double>(target.count())),
        // A sixteenth to start: small enough for the first writes of a cold
        // server, and the first change of size teaches the fixed cost.
        limit_(std::max(smallest_, largest / 16)) {}

  std::size_t limit() const noexcept { return limit_; }
  std::size_t largest() const noexcept { return largest_; }

  // A write of `count` records was stored after `latency`.
  void stored(std::size_t count, std::chrono::microseconds latency) noexcept {
    if (smallest_ == largest_ || count == 0) return;
    const double n = static_cast<double>(count);
    const double took = std::max<double>(1.0, static_cast<double>(latency.count()));
    learn_fixed_cost(n, took);
    const double per_record = std::max(took - fixed_us_, 1.0) / n;
    const double room = 0.9 * target_us_ - fixed_us_;
    if (room < 0.1 * target_us_) {
      limit_ = largest_;  // the batch size does not decide how long a write takes
      return;
    }
    const double fits = room / per_record;
    if (took > target_us_) {
      // Already as small as it gets and still slow, with no fixed cost
      // known yet: a larger batch next, so the two sizes teach it.
      limit_ = limit_ == smallest_ && !fixed_known_ ? clamp(2.0 * static_cast<double>(limit_))
                                                    : clamp(fits);
    } else if (count >= limit_) {
      limit_ = clamp(std::min(fits, 2.0 * static_cast<double>(limit_)));
    }
  }

 private:
  // Two writes whose sizes differ by a quarter or more give a line through
  // both: its value at zero records is the fixed cost.
  void learn_fixed_cost(double n, double took) noexcept {
    if (last_n_ > 0 && std::abs(n - last_n_) >= 0.25 * std::max(n, last_n_)) {
      const double slope = (took - last_took_) / (n - last_n_);
      if (slope > 0) {
        const double at_zero = std::clamp(took - slope * n, 0.0, took);
        fixed_us_ = fixed_known_ ? 0.7 * fixed_us_ + 0.3 * at_zero : at_zero;
        fixed_known_ = true;
      }
    }
    last_n_ = n;
    last_took_ = took;
  }

  std::size_t clamp(double n) const noexcept {
    return std::clamp(static_cast<std::size_t>(n), smallest_, largest_);
  }

  const std::size_t largest_;
  const std::size_t smallest_;
  const double target_us_;
  std::size_t limit_;
  double fixed_us_ = 0;  // a statement's own cost, learnt (0 until then)
  bool fixed_known_ = false;
  double last_n_ = 0;
  double last_took_ = 0;
};

}  // namespace auditpipe::internal
