// Histogram: a lock-free distribution of non-negative integers (latencies,
// batch sizes), and the plain snapshot that stats() returns.
//
// Buckets are powers of two split in four, so any quantile read back is
// within 25% of the true value, and recording is one relaxed increment: safe
// to call from any thread, cheap enough for slow paths (it is not used on the
// producer's common path).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "auditpipe/export.h"

namespace auditpipe {

/// Buckets of a Histogram: 0-3 exact, then 4 per power of two up to 2^64.
inline constexpr std::size_t histogram_buckets = 252;

/// The smallest bucket whose range holds `value`.
constexpr std::size_t histogram_bucket(std::uint64_t value) noexcept {
  if (value < 4) return static_cast<std::size_t>(value);
  const int e = 63 - __builtin_clzll(value);  // floor(log2(value)), >= 2
  const auto m = static_cast<std::size_t>((value >> (e - 2)) & 3u);
  return 4 * static_cast<std::size_t>(e - 1) + m;
}

/// The largest value that falls in bucket `b`.
constexpr std::uint64_t histogram_bucket_upper(std::size_t b) noexcept {
  if (b < 4) return b;
  const std::size_t e = b / 4 + 1;
  const std::uint64_t m = b % 4;
  const std::uint64_t lower = (std::uint64_t{4} + m) << (e - 2);
  return lower + (std::uint64_t{1} << (e - 2)) - 1;
}

/// A histogram's contents at one moment: log-linear buckets (histogram_bucket_upper), count, sum
/// and largest value.
struct AUDITPIPE_EXPORT HistogramSnapshot {
  /// Samples per bucket.
  std::array<std::uint64_t, histogram_buckets> buckets{};
  /// Samples recorded.
  std::uint64_t count = 0;
  /// Sum of all samples.
  std::uint64_t sum = 0;
  /// The largest sample.
  std::uint64_t max = 0;

  /// The value below which a fraction q of the samples fall (bucket upper
  /// bound, capped by the largest sample). 0 when empty.
  std::uint64_t quantile(double q) const noexcept;
  /// sum / count; 0 when empty.
  double mean() const noexcept { return count ? static_cast<double>(sum) / count : 0.0; }
};

/// A concurrent histogram of unsigned values (latencies, sizes): record() from any thread,
/// lock-free; snapshot() reads it.
class AUDITPIPE_EXPORT Histogram {
 public:
  /// Counts one sample.
  void record(std::uint64_t value) noexcept {
    buckets_[histogram_bucket(value)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
    std::uint64_t seen = max_.load(std::memory_order_relaxed);
    while (value > seen && !max_.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  /// The current counts (not one atomic snapshot: concurrent records may be partly seen).
  HistogramSnapshot snapshot() const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, histogram_buckets> buckets_{};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> max_{0};
};

}  // namespace auditpipe
