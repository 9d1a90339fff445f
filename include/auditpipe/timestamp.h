// timestamp: a point in time as microseconds since the Unix epoch (UTC).
//
// Stored inline in records as one int64, so it is trivially copyable and
// every sink can write it without conversion tables. `now()` reads the
// kernel's real-time clock through the vDSO: no system call, no allocation.
//
// `fast_now()` is for the producer's hot path (the mapping's stamp_now()
// uses it): where the CPU has an invariant TSC it stores the raw cycle
// counter, tagged, and the writer converts it to wall time off the hot path
// before any sink sees the record; the read costs a third of now()'s. The
// tag uses values below -2^62 microseconds (before 144,000 BC), which no
// real timestamp takes. Without a usable TSC, fast_now() is now().
//
// Thread safety: a plain value.
#pragma once

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "auditpipe/export.h"

namespace auditpipe {

/// A UTC calendar date and time of day.
struct AUDITPIPE_EXPORT civil_time {
  /// The year (negative before 1 BC's year 0, astronomical numbering).
  std::int64_t year;
  unsigned month;        ///< 1-12
  unsigned day;          ///< 1-31
  unsigned hour;         ///< 0-23
  unsigned minute;       ///< 0-59
  unsigned second;       ///< 0-59
  unsigned microsecond;  ///< 0-999999
};

/// A point in time: microseconds since the Unix epoch, UTC; trivially copyable, for record columns.
struct AUDITPIPE_EXPORT timestamp {
  std::int64_t micros = 0;  ///< since 1970-01-01T00:00:00Z

  /// The real-time clock, now (through the vDSO).
  static timestamp now() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return timestamp{static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000};
  }

  /// A reading for the writer to convert (see above); `now()` without an
  /// invariant TSC.
  static timestamp fast_now() noexcept {
#if defined(__x86_64__)
    if (tsc_usable_)
      return timestamp{pending_tag |
                       static_cast<std::int64_t>(__builtin_ia32_rdtsc() & pending_mask)};
#endif
    return now();
  }

  /// Whether this is a fast_now() reading not yet converted.
  constexpr bool pending() const noexcept {
    return (static_cast<std::uint64_t>(micros) >> 62) == 2;
  }
  /// The wall time of a pending reading; itself otherwise.
  timestamp resolved() const noexcept;

  /// From a system_clock time, truncated to microseconds.
  static constexpr timestamp from(std::chrono::system_clock::time_point tp) noexcept {
    return timestamp{
        std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count()};
  }

  /// As a system_clock time.
  constexpr std::chrono::system_clock::time_point time_point() const noexcept {
    return std::chrono::system_clock::time_point{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::microseconds{micros})};
  }

  /// The UTC calendar date and time (proleptic Gregorian), without the C
  /// library's time zone machinery: days to date after Howard Hinnant's
  /// public-domain civil_from_days.
  constexpr civil_time civil() const noexcept {
    std::int64_t days = micros / 86'400'000'000;
    std::int64_t rest = micros % 86'400'000'000;
    if (rest < 0) {
      rest += 86'400'000'000;
      --days;
    }
    const std::int64_t z = days + 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    const auto secs = static_cast<unsigned>(rest / 1'000'000);
    return civil_time{static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2),
                      m,
                      doy - (153 * mp + 2) / 5 + 1,
                      secs / 3600,
                      secs / 60 % 60,
                      secs % 60,
                      static_cast<unsigned>(rest % 1'000'000)};
  }

  /// The longest text format() writes: a sign, six year digits and the rest.
  static constexpr std::size_t max_format_size = 29;

  /// Writes "YYYY-MM-DD HH:MM:SS.ffffff" (with `separator` between date and
  /// time) to `out`; returns the end. Years 0 to 9999 take four digits;
  /// others are written whole, with a '-' before a negative year (ISO 8601's
  /// expanded form, astronomical numbering: year 0 is 1 BC), so every value
  /// is written exactly, in at most max_format_size characters.
  char* format(char* out, char separator = ' ') const noexcept {
    const civil_time t = civil();
    auto put = [&](std::uint64_t v, int width) {
      for (int i = width - 1; i >= 0; --i) {
        out[i] = static_cast<char>('0' + v % 10);
        v /= 10;
      }
      out += width;
    };
    if (t.year < 0) *out++ = '-';
    const auto year = static_cast<std::uint64_t>(t.year < 0 ? -t.year : t.year);
    int digits = 4;
    for (std::uint64_t y = year / 10000; y != 0; y /= 10) ++digits;
    put(year, digits);
    *out++ = '-';
    put(t.month, 2);
    *out++ = '-';
    put(t.day, 2);
    *out++ = separator;
    put(t.hour, 2);
    *out++ = ':';
    put(t.minute, 2);
    *out++ = ':';
    put(t.second, 2);
    *out++ = '.';
    put(t.microsecond, 6);
    return out;
  }

  /// Ordered by micros (a pending reading is not comparable with a resolved one).
  friend constexpr auto operator<=>(const timestamp&, const timestamp&) = default;

  /// Whether fast_now() reads the TSC (else it is now()).
  static bool fast_now_reads_tsc() noexcept {
    return tsc_usable_;
  }

  /// Tag bits of a pending (TSC) reading, as fast_now() stores it.
  static constexpr std::int64_t pending_tag = static_cast<std::int64_t>(std::uint64_t{1} << 63);
  /// The cycle count bits of a pending reading.
  static constexpr std::uint64_t pending_mask = (std::uint64_t{1} << 62) - 1;

 private:
  /// Set once at start (src/common/tsc_clock.cpp): the TSC is invariant and
  /// the kernel itself keeps time with it.
  static const bool tsc_usable_;
};

}  // namespace auditpipe
