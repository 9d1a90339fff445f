// Parsing one value written as text into a column's type: integers,
// booleans, floats, ISO 8601 timestamps and epoch numbers. Owned by
// ingest/input; RowMapper and the schema inference call it. Pure functions,
// no allocation.
//
// Timestamps (parse_timestamp):
//   ISO 8601: 2026-11-30T12:34:56Z, a space instead of the T, fractional
//   seconds (digits past the sixth are truncated: the type holds
//   microseconds), offsets Z, +02:00, -0500 or +02, no offset = UTC;
//   HH:MM without seconds; date-only 2026-11-30 is midnight UTC.
//   Epoch numbers (epoch_integer / epoch_seconds): seconds, with a fraction
//   or not; an integer of 13 digits is milliseconds, 16 digits microseconds,
//   19 digits nanoseconds; 14, 15, 17, 18 or more than 19 digits are refused
//   as ambiguous. Up to 12 digits are seconds. Digits past the microsecond
//   are dropped (the earlier microsecond) in every form, so one instant
//   written as ISO 8601, as decimal seconds or as nanoseconds is one value;
//   a number with an exponent (1.7e9) is read as a double and rounded, and
//   so is a JSON number with more than 16 significant digits (the JSON
//   reader gives a double; quoted, the digits are read as written).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "auditpipe/column.h"
#include "auditpipe/timestamp.h"

namespace auditpipe::ingest {

/// Said with simdjson's NUMBER_ERROR, which refuses a whole JSON line for one
/// number: most often an id beyond 64 bits.
inline constexpr std::string_view number_error_hint =
    "a number out of range (an integer beyond 64 bits, above 18446744073709551615, or a "
    "number beyond a double's, such as 1e400) or malformed; quoted, a big number loads into a "
    "text column";

/// A decimal integer, optional sign, nothing else (no spaces).
std::optional<std::int64_t> parse_integer(std::string_view s) noexcept;
/// true/false, 1/0, t/f, yes/no, y/n (ASCII case ignored).
std::optional<bool> parse_bool(std::string_view s) noexcept;
/// A finite decimal floating-point number (NaN and infinities refused).
std::optional<double> parse_float(std::string_view s) noexcept;
/// An ISO 8601 timestamp or a string of digits read as an epoch number.
std::optional<timestamp> parse_timestamp(std::string_view s) noexcept;
/// ISO 8601 only (see the file's comment).
std::optional<timestamp> parse_iso8601(std::string_view s) noexcept;
/// An integer epoch: seconds, or ms/µs/ns by its digit count (file comment).
std::optional<timestamp> epoch_integer(std::int64_t v) noexcept;
/// Epoch seconds with a fraction, read from a double: rounded to the
/// microsecond (the double's own error is larger than a dropped digit).
std::optional<timestamp> epoch_seconds(double v) noexcept;
/// Epoch seconds written as `[-]digits.digits` (no exponent), read exactly:
/// digits past the sixth of the fraction are dropped, as ISO 8601's are, so
/// an instant written both ways is one value.
std::optional<timestamp> epoch_decimal(std::string_view s) noexcept;

/// The inclusive range of an integer column type (boolean: 0..1).
struct IntegerRange {
  std::int64_t min;
  std::int64_t max;
};
/// See IntegerRange; int64's full range for non-integer types.
IntegerRange integer_range(ColumnType t) noexcept;

}  // namespace auditpipe::ingest
