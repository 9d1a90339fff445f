#include "auditpipe/table.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "audit_row.h"

namespace {

using auditpipe::ColumnType;
using testing_support::AuditRow;

TEST(Table, DescriptorMatchesTheStruct) {
  const auto& d = auditpipe::descriptor_of<AuditRow>();
  EXPECT_EQ(d.name, "audit_log");
  EXPECT_EQ(d.record_size, sizeof(AuditRow));
  EXPECT_EQ(d.record_align, alignof(AuditRow));
  ASSERT_EQ(d.columns.size(), 9u);

  struct Expect {
    const char* name;
    ColumnType type;
    std::size_t offset;
    std::size_t size;
    std::uint32_t max_length;
  };
  const Expect expected[] = {
      {"at", ColumnType::timestamp, offsetof(AuditRow, at), sizeof(auditpipe::timestamp), 0},
      {"message_id", ColumnType::int64, offsetof(AuditRow, message_id), 8, 0},
      {"status", ColumnType::int32, offsetof(AuditRow, status), 4, 0},
      {"channel", ColumnType::uint16, offsetof(AuditRow, channel), 2, 0},
      {"latency_ms", ColumnType::float64, offsetof(AuditRow, latency_ms), 8, 0},
      {"delivered", ColumnType::boolean, offsetof(AuditRow, delivered), 1, 0},
      {"sender", ColumnType::text, offsetof(AuditRow, sender), sizeof(AuditRow::sender), 32},
      {"receiver", ColumnType::text, offsetof(AuditRow, receiver), sizeof(AuditRow::receiver), 32},
      {"payload", ColumnType::text, offsetof(AuditRow, payload), sizeof(AuditRow::payload), 128},
  };
  for (std::size_t i = 0; i < d.columns.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(d.columns[i].name, expected[i].name);
    EXPECT_EQ(d.columns[i].type, expected[i].type);
    EXPECT_EQ(d.columns[i].offset, expected[i].offset);
    EXPECT_EQ(d.columns[i].size, expected[i].size);
    EXPECT_EQ(d.columns[i].max_length, expected[i].max_length);
  }
}

TEST(Table, IsAConstantExpression) {
  constexpr auto t = auditpipe::table_of<AuditRow>;
  static_assert(t.columns.size() == 9);
  static_assert(t.columns[1].name == "message_id");
  static_assert(t.columns[8].max_length == 128);
  SUCCEED();
}

TEST(Table, ReadersReturnWhatWasStored) {
  AuditRow row;
  row.at = auditpipe::timestamp{1'700'000'000'123'456};
  row.message_id = -42;
  row.status = 7;
  row.channel = 65535;
  row.latency_ms = 2.5;
  row.delivered = true;
  row.sender = "alice";
  const auto* bytes = reinterpret_cast<const std::byte*>(&row);
  const auto& c = auditpipe::descriptor_of<AuditRow>().columns;
  EXPECT_EQ(auditpipe::read_integer(bytes, c[0]), 1'700'000'000'123'456);
  EXPECT_EQ(auditpipe::read_integer(bytes, c[1]), -42);
  EXPECT_EQ(auditpipe::read_integer(bytes, c[2]), 7);
  EXPECT_EQ(auditpipe::read_integer(bytes, c[3]), 65535);
  EXPECT_EQ(auditpipe::read_float64(bytes, c[4]), 2.5);
  EXPECT_EQ(auditpipe::read_integer(bytes, c[5]), 1);
  EXPECT_EQ(auditpipe::read_text(bytes, c[6]), "alice");
  EXPECT_EQ(auditpipe::read_text(bytes, c[7]), "");
}

TEST(Table, IdentifierRules) {
  using auditpipe::detail::is_identifier;
  EXPECT_TRUE(is_identifier("audit_log"));
  EXPECT_TRUE(is_identifier("_x1"));
  EXPECT_FALSE(is_identifier("1x"));
  EXPECT_FALSE(is_identifier("a-b"));
  EXPECT_FALSE(is_identifier("a;DROP"));
  EXPECT_FALSE(is_identifier(""));
}

}  // namespace
