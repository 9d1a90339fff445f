// auditpipe::nullable<T>: its layout, what the descriptor says of it, and
// the mapping rules that fill it (std::optional, pointers, plain values).
#include "auditpipe/nullable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "auditpipe/column.h"
#include "auditpipe/mapping.h"
#include "null_row.h"

namespace {

using auditpipe::fixed_string;
using auditpipe::nullable;
using auditpipe::timestamp;
using testing_support::NullRow;

static_assert(std::is_trivially_copyable_v<nullable<fixed_string<16>>>);
static_assert(std::is_standard_layout_v<nullable<fixed_string<16>>>);
static_assert(std::is_trivially_copyable_v<nullable<double>>);
static_assert(std::is_trivially_copyable_v<NullRow>);
static_assert(std::is_standard_layout_v<NullRow>);

const auditpipe::Column& column(std::string_view name) {
  for (const auto& c : auditpipe::descriptor_of<NullRow>().columns) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no column " + std::string(name));
}

bool null_in(const NullRow& r, std::string_view name) {
  return auditpipe::is_null(reinterpret_cast<const std::byte*>(&r), column(name));
}

TEST(Nullable, TheDescriptorKeepsTheValueTypeAndMarksTheColumn) {
  const auto& d = auditpipe::descriptor_of<NullRow>();
  EXPECT_FALSE(column("message_id").nullable);
  EXPECT_EQ(column("at").type, auditpipe::ColumnType::timestamp);
  EXPECT_EQ(column("i8").type, auditpipe::ColumnType::int8);
  EXPECT_EQ(column("u32").type, auditpipe::ColumnType::uint32);
  EXPECT_EQ(column("flag").type, auditpipe::ColumnType::boolean);
  EXPECT_EQ(column("amount").type, auditpipe::ColumnType::float64);
  EXPECT_EQ(column("note").type, auditpipe::ColumnType::text);
  EXPECT_EQ(column("note").max_length, 16u);
  EXPECT_EQ(column("note").offset, offsetof(NullRow, note));
  EXPECT_EQ(column("note").size, sizeof(fixed_string<16>));
  for (const auto& c : d.columns) {
    if (c.name == "message_id") continue;
    EXPECT_TRUE(c.nullable) << c.name;
    EXPECT_GE(c.presence_offset, c.offset + c.size) << c.name;
    EXPECT_LT(c.presence_offset, d.record_size) << c.name;
  }
}

TEST(Nullable, APrototypeMemberIsNullUnlessTheRecordSaysOtherwise) {
  struct WithDefault {
    nullable<std::int32_t> plain;
    nullable<std::int32_t> five = 5;
    nullable<fixed_string<8>> named = "x";
  };
  const WithDefault w{};
  EXPECT_FALSE(w.plain.has_value());
  ASSERT_TRUE(w.five.has_value());
  EXPECT_EQ(*w.five, 5);
  ASSERT_TRUE(w.named.has_value());
  EXPECT_EQ(*w.named, "x");
  const NullRow r{};
  for (const char* name : testing_support::null_row_columns) EXPECT_TRUE(null_in(r, name)) << name;
}

TEST(Nullable, AssignmentStoresTheValueAndNulloptClearsIt) {
  NullRow r;
  r.i32 = 0;
  EXPECT_FALSE(null_in(r, "i32"));
  EXPECT_EQ(auditpipe::read_integer(reinterpret_cast<const std::byte*>(&r), column("i32")), 0);
  r.i32 = std::nullopt;
  EXPECT_TRUE(null_in(r, "i32"));
  r.note = "";
  EXPECT_FALSE(null_in(r, "note"));  // an empty string is not NULL
  r.note = static_cast<const char*>(nullptr);
  EXPECT_TRUE(null_in(r, "note"));  // a null C string is
}

TEST(Nullable, TruncationIsFlaggedInsideANullableText) {
  NullRow r;
  r.note = std::string(20, 'a');
  const auto* bytes = reinterpret_cast<const std::byte*>(&r);
  EXPECT_EQ(auditpipe::read_text(bytes, column("note")), std::string(16, 'a'));
  EXPECT_TRUE(auditpipe::read_text_flags(bytes, column("note")) & auditpipe::text_flags::truncated);
  EXPECT_TRUE(r.note->truncated());
}

struct Source {
  std::optional<std::int64_t> amount;
  std::optional<std::string> who;
  const char* c_text = nullptr;
  const double* ratio = nullptr;
  const std::string* name = nullptr;
  std::int32_t code = 0;
  nullable<std::int16_t> small;
  std::optional<std::chrono::system_clock::time_point> when;
};

struct Target {
  nullable<std::int64_t> amount;
  nullable<fixed_string<8>> who;
  nullable<fixed_string<8>> c_text;
  nullable<double> ratio;
  nullable<fixed_string<8>> name;
  nullable<std::int32_t> code;
  nullable<std::int32_t> small;
  nullable<timestamp> when;
};

constexpr auto map = auditpipe::mapping(auditpipe::field(&Source::amount, &Target::amount),
                                        auditpipe::field(&Source::who, &Target::who),
                                        auditpipe::field(&Source::c_text, &Target::c_text),
                                        auditpipe::field(&Source::ratio, &Target::ratio),
                                        auditpipe::field(&Source::name, &Target::name),
                                        auditpipe::field(&Source::code, &Target::code),
                                        auditpipe::field(&Source::small, &Target::small),
                                        auditpipe::field(&Source::when, &Target::when));

TEST(Nullable, EmptySourcesMapToNull) {
  Target t;
  t.amount = 1;
  t.who = "stale";
  t.c_text = "stale";
  t.ratio = 1.0;
  t.name = "stale";
  t.small = 3;
  t.when = timestamp{5};
  map.apply(Source{}, t);
  EXPECT_FALSE(t.amount.has_value());
  EXPECT_FALSE(t.who.has_value());
  EXPECT_FALSE(t.c_text.has_value());
  EXPECT_FALSE(t.ratio.has_value());
  EXPECT_FALSE(t.name.has_value());
  EXPECT_FALSE(t.small.has_value());
  EXPECT_FALSE(t.when.has_value());
  ASSERT_TRUE(t.code.has_value());  // a plain source is never NULL
  EXPECT_EQ(*t.code, 0);
}

TEST(Nullable, PresentSourcesMapToTheirValues) {
  const double ratio = 0.5;
  const std::string name = "a long name";
  Source s;
  s.amount = 0;
  s.who = "";
  s.c_text = "c";
  s.ratio = &ratio;
  s.name = &name;
  s.code = 7;
  s.small = std::int16_t{-2};
  s.when = std::chrono::system_clock::time_point{std::chrono::microseconds{42}};
  Target t;
  map.apply(s, t);
  ASSERT_TRUE(t.amount && t.who && t.c_text && t.ratio && t.name && t.code && t.small && t.when);
  EXPECT_EQ(*t.amount, 0);
  EXPECT_EQ(*t.who, "");
  EXPECT_EQ(*t.c_text, "c");
  EXPECT_EQ(*t.ratio, 0.5);
  EXPECT_EQ(*t.name, "a long n");
  EXPECT_TRUE(t.name->truncated());
  EXPECT_EQ(*t.code, 7);
  EXPECT_EQ(*t.small, -2);
  EXPECT_EQ(t.when->micros, 42);
}

TEST(Nullable, StampNowFillsANullableTimestamp) {
  struct Stamped {
    nullable<timestamp> at;
  };
  constexpr auto stamp = auditpipe::mapping(auditpipe::stamp_now(&Stamped::at));
  Stamped s;
  stamp.apply(Source{}, s);
  ASSERT_TRUE(s.at.has_value());
  EXPECT_NE(s.at->micros, 0);
}

}  // namespace
