// timestamp: a point in time as microseconds since the Unix epoch (UTC).
//
// Stored inline in records as one int64, so it is trivially copyable and
// every sink can write it without conversion tables. `now()` reads the
// kernel's real-time clock through the vDSO: no system call, no allocation.
//
// Thread safety: a plain value.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <ctime>

namespace auditpipe {

struct timestamp {
  std::int64_t micros = 0;  // since 1970-01-01T00:00:00Z

  static timestamp now() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return timestamp{static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000};
  }

  static constexpr timestamp from(std::chrono::system_clock::time_point tp) noexcept {
    return timestamp{
        std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count()};
  }

  constexpr std::chrono::system_clock::time_point time_point() const noexcept {
    return std::chrono::system_clock::time_point{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::microseconds{micros})};
  }

  friend constexpr auto operator<=>(const timestamp&, const timestamp&) = default;
};

}  // namespace auditpipe
