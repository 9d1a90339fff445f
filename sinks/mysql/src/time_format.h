// auditpipe::timestamp (microseconds since the epoch, UTC) as MySQL's
// DATETIME(6), without the C library's time zone machinery.
#pragma once

#include <mysql.h>

#include <cstdint>

namespace auditpipe::mysql {

struct CivilTime {
  int year;
  unsigned month, day, hour, minute, second, microsecond;
};

// Days-to-date after Howard Hinnant's public-domain civil_from_days.
constexpr CivilTime civil_time(std::int64_t micros) noexcept {
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
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const auto secs = static_cast<unsigned>(rest / 1'000'000);
  return CivilTime{
      static_cast<int>(y + (m <= 2)),         m, d, secs / 3600, secs / 60 % 60, secs % 60,
      static_cast<unsigned>(rest % 1'000'000)};
}

// DATETIME holds years 1000 to 9999.
constexpr bool fits_datetime(const CivilTime& t) noexcept {
  return t.year >= 1000 && t.year <= 9999;
}

inline MYSQL_TIME to_mysql_time(const CivilTime& t) noexcept {
  MYSQL_TIME out{};
  out.year = static_cast<unsigned>(t.year);
  out.month = t.month;
  out.day = t.day;
  out.hour = t.hour;
  out.minute = t.minute;
  out.second = t.second;
  out.second_part = t.microsecond;
  out.time_type = MYSQL_TIMESTAMP_DATETIME;
  return out;
}

// Writes "YYYY-MM-DD HH:MM:SS.ffffff" (26 bytes) to `out`.
inline char* format_datetime(const CivilTime& t, char* out) noexcept {
  auto put = [&](unsigned v, int width) {
    for (int i = width - 1; i >= 0; --i) {
      out[i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    out += width;
  };
  put(static_cast<unsigned>(t.year), 4);
  *out++ = '-';
  put(t.month, 2);
  *out++ = '-';
  put(t.day, 2);
  *out++ = ' ';
  put(t.hour, 2);
  *out++ = ':';
  put(t.minute, 2);
  *out++ = ':';
  put(t.second, 2);
  *out++ = '.';
  put(t.microsecond, 6);
  return out;
}

}  // namespace auditpipe::mysql
