// auditpipe::timestamp (microseconds since the epoch, UTC) as MySQL's
// DATETIME(6).
#pragma once

#include <mysql.h>

#include <cstdint>

#include "auditpipe/timestamp.h"

namespace auditpipe::mysql {

inline civil_time civil_time_of(std::int64_t micros) noexcept {
  return timestamp{micros}.civil();
}

// DATETIME holds years 1000 to 9999.
constexpr bool fits_datetime(const civil_time& t) noexcept {
  return t.year >= 1000 && t.year <= 9999;
}

inline MYSQL_TIME to_mysql_time(const civil_time& t) noexcept {
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

}  // namespace auditpipe::mysql
