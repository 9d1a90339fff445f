// See seal_read_back.h.
#include "auditpipe/sink/seal_read_back.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

namespace auditpipe::seal {

namespace {

void integer_or_text(RowEncoder& enc, std::string_view v) {
  std::int64_t n = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && p == v.data() + v.size()) {
    enc.integer(n);
  } else {
    enc.text(v);
  }
}

}  // namespace

std::string read_back_expression(std::string_view dialect, ColumnType type,
                                 const std::string& quoted) {
  if (type != ColumnType::timestamp) return quoted;
  if (dialect == "mysql")
    return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + quoted + ")";
  if (dialect == "postgresql") {
    // Whole minutes' seconds, then the microseconds within the minute:
    // extract(epoch) is a double, which rounds far-off timestamps. In
    // numeric, and 'infinity' as itself: a value no writer stores (bigint
    // out of range, or infinity) failed the whole query, and verify said
    // "could not verify" instead of naming the changed row. Both parts
    // numeric: before PostgreSQL 14 extract() is a double, which would make
    // the sum a double printed in exponent form.
    return "CASE WHEN isfinite(" + quoted +
           ") THEN (floor(extract(epoch from date_trunc('minute', " + quoted +
           ")))::numeric * 1000000 + extract(microseconds from " + quoted +
           ")::numeric)::text ELSE " + quoted + "::text END";
  }
  return quoted;
}

std::string read_back_select(std::string_view dialect, const std::vector<ColumnSpec>& columns,
                             const std::function<std::string(std::string_view)>& quote) {
  std::string select;
  for (const ColumnSpec& c : columns) {
    select += read_back_expression(dialect, c.type, quote(c.name));
    select += ", ";
  }
  return select + "seq";
}

std::vector<std::string> read_back_settings(std::string_view dialect, bool local) {
  if (dialect != "postgresql") return {};
  const std::string set = local ? "SET LOCAL " : "SET ";
  return {set + "TIME ZONE 'UTC'", set + "extra_float_digits = 3"};
}

void encode_read_back(RowEncoder& enc, ColumnType type, std::optional<std::string_view> value) {
  if (!value) {
    enc.null();
    return;
  }
  const std::string_view v = *value;
  switch (type) {
    case ColumnType::text:
      enc.text(v);
      return;
    case ColumnType::float64: {
      double d = 0;
      if (v == "Infinity" || v == "Inf" || v == "inf") {
        d = HUGE_VAL;
      } else if (v == "-Infinity" || v == "-Inf" || v == "-inf") {
        d = -HUGE_VAL;
      } else if (const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
                 ec != std::errc() || p != v.data() + v.size()) {
        enc.text(v);
        return;
      }
      enc.float64(d);
      return;
    }
    case ColumnType::boolean:
      // PostgreSQL says t/f; MySQL's BOOLEAN is a TINYINT(1), which holds
      // -128..127: a 5 there is not the 1 that was sealed.
      if (v == "t" || v == "true") {
        enc.integer(1);
      } else if (v == "f" || v == "false") {
        enc.integer(0);
      } else {
        integer_or_text(enc, v);
      }
      return;
    default:
      integer_or_text(enc, v);
  }
}

}  // namespace auditpipe::seal
