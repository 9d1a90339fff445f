// value_parse: integers, booleans, floats, ISO 8601 timestamps and epochs.
#include "input/value_parse.h"

#include <gtest/gtest.h>

namespace {

using namespace auditpipe::ingest;

std::int64_t micros(std::string_view s) {
  auto t = parse_timestamp(s);
  EXPECT_TRUE(t.has_value()) << s;
  return t ? t->micros : 0;
}

TEST(ValueParse, Integers) {
  EXPECT_EQ(parse_integer("42"), 42);
  EXPECT_EQ(parse_integer("-7"), -7);
  EXPECT_EQ(parse_integer("+7"), 7);
  EXPECT_EQ(parse_integer("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(parse_integer("9223372036854775808"));
  EXPECT_FALSE(parse_integer(""));
  EXPECT_FALSE(parse_integer("+"));
  EXPECT_FALSE(parse_integer("1.5"));
  EXPECT_FALSE(parse_integer(" 1"));
  EXPECT_FALSE(parse_integer("0x10"));
}

TEST(ValueParse, Booleans) {
  for (const char* t : {"true", "TRUE", "True", "1", "t", "T", "yes", "YES", "y"})
    EXPECT_EQ(parse_bool(t), true) << t;
  for (const char* f : {"false", "FALSE", "0", "f", "no", "No", "n"})
    EXPECT_EQ(parse_bool(f), false) << f;
  for (const char* x : {"", "2", "maybe", "truee", "on"}) EXPECT_FALSE(parse_bool(x)) << x;
}

TEST(ValueParse, Floats) {
  EXPECT_EQ(parse_float("1.5"), 1.5);
  EXPECT_EQ(parse_float("-2e3"), -2000.0);
  EXPECT_EQ(parse_float("+3"), 3.0);
  EXPECT_FALSE(parse_float("nan"));
  EXPECT_FALSE(parse_float("inf"));
  EXPECT_FALSE(parse_float("-infinity"));
  EXPECT_FALSE(parse_float("1e999"));
  EXPECT_FALSE(parse_float("1.5x"));
}

TEST(ValueParse, Iso8601) {
  const std::int64_t base = 1796042096LL * 1000000;  // 2026-11-30T12:34:56Z
  EXPECT_EQ(micros("2026-11-30T12:34:56Z"), base);
  EXPECT_EQ(micros("2026-11-30 12:34:56Z"), base);
  EXPECT_EQ(micros("2026-11-30T12:34:56"), base);  // no offset: UTC
  EXPECT_EQ(micros("2026-11-30t12:34:56z"), base);
  EXPECT_EQ(micros("2026-11-30T12:34:56.5Z"), base + 500000);
  EXPECT_EQ(micros("2026-11-30T12:34:56.123456Z"), base + 123456);
  EXPECT_EQ(micros("2026-11-30T12:34:56.123456789Z"), base + 123456);  // truncated to µs
  EXPECT_EQ(micros("2026-11-30T14:34:56+02:00"), base);
  EXPECT_EQ(micros("2026-11-30T07:34:56-0500"), base);
  EXPECT_EQ(micros("2026-11-30T14:34:56+02"), base);
  EXPECT_EQ(micros("2026-11-30T12:34Z"), base - 56000000);
  EXPECT_EQ(micros("2026-11-30"), (base / 86400000000) * 86400000000);
  EXPECT_EQ(micros("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(micros("1969-12-31T23:59:59Z"), -1000000);
  EXPECT_EQ(micros("2024-02-29"), 1709164800LL * 1000000);
  for (const char* bad :
       {"2026-13-01", "2026-02-30", "2023-02-29", "2026-11-30T25:00:00Z", "2026-11-30T12:60:00Z",
        "2026-11-30T12:34:56+2", "2026-11-30X12:34", "2026-11-30T12:34:56Zjunk",
        "2026-11-30T12:34:56.Z", "26-11-30", "2026/11/30", "hello"})
    EXPECT_FALSE(parse_iso8601(bad)) << bad;
}

TEST(ValueParse, EpochNumbers) {
  EXPECT_EQ(epoch_integer(1796042096)->micros, 1796042096LL * 1000000);       // s
  EXPECT_EQ(epoch_integer(1796042096123)->micros, 1796042096123LL * 1000);    // ms, 13 digits
  EXPECT_EQ(epoch_integer(1796042096123456)->micros, 1796042096123456LL);     // µs, 16 digits
  EXPECT_EQ(epoch_integer(1796042096123456789)->micros, 1796042096123456LL);  // ns, 19 digits
  EXPECT_EQ(epoch_integer(0)->micros, 0);
  EXPECT_FALSE(epoch_integer(17960420961234));  // 14 digits: ambiguous
  EXPECT_FALSE(epoch_integer(179604209612345));
  EXPECT_EQ(epoch_seconds(1796042096.25)->micros, 1796042096250000LL);
  EXPECT_EQ(micros("1796042096"), 1796042096LL * 1000000);
  EXPECT_EQ(micros("1796042096.5"), 1796042096500000LL);
}

// One instant written as ISO 8601, as decimal seconds and as nanoseconds
// is one value: digits past the microsecond are dropped in each (decimal
// seconds were rounded, nanoseconds before 1970 rounded up).
TEST(ValueParse, AnInstantIsOneValueInEveryForm) {
  const std::int64_t at = 1733486400123456LL;
  EXPECT_EQ(micros("2024-12-06T12:00:00.1234567Z"), at);
  EXPECT_EQ(micros("1733486400.1234567"), at);
  EXPECT_EQ(micros("1733486400.123456999"), at);
  EXPECT_EQ(micros("1733486400123456700"), at);
  EXPECT_EQ(micros("1733486400.123456"), at);  // six digits: exact, no double's error
  EXPECT_EQ(micros("1733486400.1"), at - 23456);
  EXPECT_EQ(micros("1733486400."), at - 123456);
  // Before 1970: the earlier microsecond, as ISO's fraction gives.
  EXPECT_EQ(micros("1969-12-31T23:59:59.9999999Z"), -1);
  EXPECT_EQ(micros("-0.0000001"), -1);
  EXPECT_EQ(micros("-0.000001"), -1);
  EXPECT_EQ(micros("-1.5"), -1500000);
  EXPECT_EQ(micros("-1000000000000000100"), -1000000000000001LL);
  EXPECT_EQ(micros("-1000000000000000000"), -1000000000000000LL);
  // An exponent: read as a double.
  EXPECT_EQ(micros("1.7e9"), 1700000000000000LL);
  EXPECT_FALSE(parse_timestamp("1000000000000.5"));  // 13 digits of seconds
  EXPECT_EQ(micros(".5"), 500000);
  EXPECT_FALSE(parse_timestamp("1.2.3"));
}

TEST(ValueParse, IntegerRanges) {
  EXPECT_EQ(integer_range(auditpipe::ColumnType::uint8).max, 255);
  EXPECT_EQ(integer_range(auditpipe::ColumnType::int8).min, -128);
  EXPECT_EQ(integer_range(auditpipe::ColumnType::uint32).max, 4294967295LL);
  EXPECT_EQ(integer_range(auditpipe::ColumnType::boolean).max, 1);
}

}  // namespace
