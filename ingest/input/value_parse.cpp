// The text-to-value parsers of value_parse.h.
#include "input/value_parse.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace auditpipe::ingest {
namespace {

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != b[i]) return false;
  return true;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, unsigned& out) noexcept {
  if (pos + n > s.size()) return false;
  unsigned v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
  }
  out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return days[m - 1];
}

}  // namespace

std::optional<std::int64_t> parse_integer(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  std::size_t i = s[0] == '+' ? 1 : 0;
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || i == s.size()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) noexcept {
  if (iequals(s, "true") || iequals(s, "t") || iequals(s, "yes") || iequals(s, "y") || s == "1")
    return true;
  if (iequals(s, "false") || iequals(s, "f") || iequals(s, "no") || iequals(s, "n") || s == "0")
    return false;
  return std::nullopt;
}

std::optional<double> parse_float(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  std::size_t i = s[0] == '+' ? 1 : 0;
  double v = 0;
  const auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<timestamp> parse_iso8601(std::string_view s) noexcept {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(s, 0, 4, year) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, month) ||
      s[7] != '-' || !digits(s, 8, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) return std::nullopt;
  std::size_t i = 10;
  std::int64_t micros = 0;
  std::int64_t offset_seconds = 0;
  if (i < s.size()) {
    if (s[i] != 'T' && s[i] != 't' && s[i] != ' ') return std::nullopt;
    ++i;
    if (!digits(s, i, 2, hour) || i + 2 >= s.size() || s[i + 2] != ':' ||
        !digits(s, i + 3, 2, minute))
      return std::nullopt;
    i += 5;
    if (i < s.size() && s[i] == ':') {
      if (!digits(s, i + 1, 2, second)) return std::nullopt;
      i += 3;
      if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
        ++i;
        std::size_t n = 0;
        std::int64_t frac = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (n < 6) frac = frac * 10 + (s[i] - '0');
          ++n;
          ++i;
        }
        if (n == 0) return std::nullopt;
        for (std::size_t k = n; k < 6; ++k) frac *= 10;
        micros = frac;
      }
    }
    if (hour > 23 || minute > 59 || second > 59) return std::nullopt;
    if (i < s.size()) {
      const char c = s[i];
      if ((c == 'Z' || c == 'z') && i + 1 == s.size()) {
        ++i;
      } else if (c == '+' || c == '-') {
        unsigned oh = 0, om = 0;
        if (!digits(s, i + 1, 2, oh)) return std::nullopt;
        std::size_t j = i + 3;
        if (j < s.size()) {
          if (s[j] == ':') ++j;
          if (!digits(s, j, 2, om)) return std::nullopt;
          j += 2;
        }
        if (j != s.size() || oh > 23 || om > 59) return std::nullopt;
        offset_seconds = (c == '+' ? 1 : -1) * static_cast<std::int64_t>(oh * 3600 + om * 60);
        i = j;
      } else {
        return std::nullopt;
      }
    }
  }
  if (i != s.size()) return std::nullopt;
  const std::int64_t secs = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 +
                            second - offset_seconds;
  return timestamp{secs * 1'000'000 + micros};
}

std::optional<timestamp> epoch_integer(std::int64_t v) noexcept {
  const std::uint64_t mag =
      v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  int n = 1;
  for (std::uint64_t m = mag; m >= 10; m /= 10) ++n;
  switch (n) {
    case 13:
      return timestamp{v * 1000};
    case 16:
      return timestamp{v};
    case 19:
      // Down, as an ISO fraction's digits past the sixth are dropped: the
      // same instant in either form is the same microsecond (before 1970
      // too, where dividing would round up).
      return timestamp{v / 1000 - (v % 1000 < 0 ? 1 : 0)};
    default:
      break;
  }
  if (n <= 12) return timestamp{v * 1'000'000};
  return std::nullopt;
}

std::optional<timestamp> epoch_seconds(double v) noexcept {
  if (!std::isfinite(v) || std::fabs(v) >= 1e12) return std::nullopt;
  return timestamp{static_cast<std::int64_t>(std::llround(v * 1e6))};
}

std::optional<timestamp> epoch_decimal(std::string_view s) noexcept {
  std::size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) ++i;
  std::int64_t secs = 0;
  int int_digits = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++int_digits) {
    if (int_digits == 12) return std::nullopt;  // as epoch_seconds: below 1e12
    secs = secs * 10 + (s[i] - '0');
  }
  if (int_digits == 0 || i == s.size() || s[i] != '.') return std::nullopt;
  ++i;
  std::int64_t micros = 0;
  int frac_digits = 0;
  bool dropped = false;  // a nonzero digit past the sixth
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++frac_digits) {
    if (frac_digits < 6) {
      micros = micros * 10 + (s[i] - '0');
    } else if (s[i] != '0') {
      dropped = true;
    }
  }
  if (i != s.size()) return std::nullopt;
  for (int d = frac_digits; d < 6; ++d) micros *= 10;
  const std::int64_t magnitude = secs * 1'000'000 + micros;
  // Down, as an ISO fraction's extra digits are dropped (before 1970, that
  // is away from zero).
  return timestamp{negative ? -magnitude - (dropped ? 1 : 0) : magnitude};
}

std::optional<timestamp> parse_timestamp(std::string_view s) noexcept {
  if (auto t = parse_iso8601(s)) return t;
  if (auto i = parse_integer(s)) return epoch_integer(*i);
  if (auto t = epoch_decimal(s)) return t;
  if (auto d = parse_float(s)) return epoch_seconds(*d);
  return std::nullopt;
}

IntegerRange integer_range(ColumnType t) noexcept {
  switch (t) {
    case ColumnType::boolean:
      return {0, 1};
    case ColumnType::int8:
      return {-128, 127};
    case ColumnType::int16:
      return {-32768, 32767};
    case ColumnType::int32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    case ColumnType::uint8:
      return {0, 255};
    case ColumnType::uint16:
      return {0, 65535};
    case ColumnType::uint32:
      return {0, std::numeric_limits<std::uint32_t>::max()};
    default:
      return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
}

}  // namespace auditpipe::ingest
