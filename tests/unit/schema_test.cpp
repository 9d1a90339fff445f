// auditpipe::Schema: the checks a runtime table gets (each refusal and its
// message), the record layout (the same bytes as a compiled record type of
// the same columns: offsets, sizes, presence bytes, size, alignment,
// prototype) and descriptors that stay valid across copies and moves.
#include "auditpipe/schema.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "audit_row.h"
#include "auditpipe/nullable.h"
#include "auditpipe/table.h"
#include "null_row.h"

namespace schema_test {

// Every type, nullable and not, in an order that needs padding.
struct Mixed {
  bool flag = false;
  auditpipe::nullable<double> amount;
  std::uint8_t small = 0;
  auditpipe::fixed_string<5> code;
  auditpipe::nullable<std::int16_t> level;
  auditpipe::nullable<auditpipe::fixed_string<3>> tag;
  std::int64_t id = 0;
  auditpipe::nullable<bool> maybe;
  auditpipe::timestamp at;
  std::uint32_t count = 0;
  auditpipe::nullable<std::uint8_t> last;
};

constexpr auto describe(auditpipe::type_tag<Mixed>) {
  return auditpipe::table<Mixed>(
      "mixed", AUDITPIPE_COLUMN(Mixed, flag), AUDITPIPE_COLUMN(Mixed, amount),
      AUDITPIPE_COLUMN(Mixed, small), AUDITPIPE_COLUMN(Mixed, code), AUDITPIPE_COLUMN(Mixed, level),
      AUDITPIPE_COLUMN(Mixed, tag), AUDITPIPE_COLUMN(Mixed, id), AUDITPIPE_COLUMN(Mixed, maybe),
      AUDITPIPE_COLUMN(Mixed, at), AUDITPIPE_COLUMN(Mixed, count), AUDITPIPE_COLUMN(Mixed, last));
}

}  // namespace schema_test

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using auditpipe::Schema;
using auditpipe::TableDescriptor;

// The specs of a compiled descriptor's columns.
std::vector<ColumnSpec> specs_of(const TableDescriptor& d) {
  std::vector<ColumnSpec> out;
  for (const auto& c : d.columns) {
    out.push_back({std::string(c.name), c.type, c.max_length, c.nullable});
  }
  return out;
}

void expect_same_layout(const TableDescriptor& runtime, const TableDescriptor& compiled) {
  EXPECT_EQ(runtime.name, compiled.name);
  ASSERT_EQ(runtime.columns.size(), compiled.columns.size());
  for (std::size_t i = 0; i < compiled.columns.size(); ++i) {
    const auto& r = runtime.columns[i];
    const auto& c = compiled.columns[i];
    SCOPED_TRACE(std::string(c.name));
    EXPECT_EQ(r.name, c.name);
    EXPECT_EQ(r.type, c.type);
    EXPECT_EQ(r.offset, c.offset);
    EXPECT_EQ(r.size, c.size);
    EXPECT_EQ(r.max_length, c.max_length);
    EXPECT_EQ(r.nullable, c.nullable);
    EXPECT_EQ(r.presence_offset, c.presence_offset);
  }
  EXPECT_EQ(runtime.record_size, compiled.record_size);
  EXPECT_EQ(runtime.record_align, compiled.record_align);
  ASSERT_NE(runtime.prototype, nullptr);
  EXPECT_EQ(std::memcmp(runtime.prototype, compiled.prototype, compiled.record_size), 0);
}

template <class Record>
void expect_layout_of() {
  const TableDescriptor& compiled = auditpipe::descriptor_of<Record>();
  const Schema schema(std::string(compiled.name), specs_of(compiled));
  expect_same_layout(schema.descriptor(), compiled);
}

TEST(Schema, LaysRecordsOutAsACompiledRecordTypeWould) {
  expect_layout_of<testing_support::AuditRow>();
  expect_layout_of<testing_support::NullRow>();
  expect_layout_of<schema_test::Mixed>();
}

TEST(Schema, OneColumnOfEachTypeAloneHasItsTypesSizeAndAlignment) {
  struct Case {
    ColumnType type;
    std::uint32_t max_length;
    std::uint32_t size, align;
  };
  for (const Case& c :
       {Case{ColumnType::boolean, 0, 1, 1}, Case{ColumnType::int8, 0, 1, 1},
        Case{ColumnType::int16, 0, 2, 2}, Case{ColumnType::int32, 0, 4, 4},
        Case{ColumnType::int64, 0, 8, 8}, Case{ColumnType::uint8, 0, 1, 1},
        Case{ColumnType::uint16, 0, 2, 2}, Case{ColumnType::uint32, 0, 4, 4},
        Case{ColumnType::float64, 0, 8, 8}, Case{ColumnType::timestamp, 0, 8, 8},
        Case{ColumnType::text, 1, 12, 4}, Case{ColumnType::text, 1u << 24, 8 + (1u << 24), 4}}) {
    SCOPED_TRACE(std::string(auditpipe::to_string(c.type)));
    const Schema s("t", {{"v", c.type, c.max_length}});
    EXPECT_EQ(s.descriptor().record_size, c.size);
    EXPECT_EQ(s.descriptor().record_align, c.align);
    EXPECT_EQ(s.descriptor().columns[0].offset, 0u);
    const Schema n("t", {{"v", c.type, c.max_length, true}});
    EXPECT_EQ(n.descriptor().columns[0].presence_offset, c.size);
    EXPECT_EQ(n.descriptor().record_size, (c.size + 1 + c.align - 1) / c.align * c.align);
  }
}

TEST(Schema, ThePrototypeIsZerosWithNullableColumnsNull) {
  const Schema s("t", {{"a", ColumnType::int32}, {"b", ColumnType::text, 10, true}});
  const auto& d = s.descriptor();
  for (std::uint32_t i = 0; i < d.record_size; ++i) EXPECT_EQ(d.prototype[i], std::byte{0}) << i;
  EXPECT_TRUE(auditpipe::is_null(d.prototype, d.columns[1]));
  EXPECT_EQ(auditpipe::read_text(d.prototype, d.columns[1]), "");
  EXPECT_EQ(auditpipe::read_integer(d.prototype, d.columns[0]), 0);
}

std::string refusal(std::string table, std::vector<ColumnSpec> columns) {
  try {
    Schema s(std::move(table), std::move(columns));
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "(accepted)";
}

constexpr const char* not_identifier =
    "is not a plain SQL identifier (letters, digits, _; at most 64 characters)";

TEST(Schema, RefusesATableNameThatIsNotAPlainIdentifier) {
  const std::vector<ColumnSpec> one{{"a", ColumnType::int64}};
  EXPECT_EQ(
      refusal("audit log", one),
      std::string("auditpipe: schema for table \"audit log\": the table name ") + not_identifier);
  EXPECT_EQ(refusal("", one),
            std::string("auditpipe: schema for table \"\": the table name ") + not_identifier);
  EXPECT_EQ(refusal("1st", one),
            std::string("auditpipe: schema for table \"1st\": the table name ") + not_identifier);
  EXPECT_EQ(refusal(std::string(65, 't'), one), "auditpipe: schema for table \"" +
                                                    std::string(65, 't') + "\": the table name " +
                                                    not_identifier);
  EXPECT_EQ(refusal(std::string(64, 't'), one), "(accepted)");
}

TEST(Schema, RefusesAColumnNameThatIsNotAPlainIdentifier) {
  EXPECT_EQ(refusal("t", {{"a", ColumnType::int64}, {"user-name", ColumnType::text, 8}}),
            std::string("auditpipe: schema for table \"t\": column \"user-name\": the name ") +
                not_identifier);
  EXPECT_EQ(
      refusal("t", {{"", ColumnType::int64}}),
      std::string("auditpipe: schema for table \"t\": column \"\": the name ") + not_identifier);
  // Quotes, backslashes and control bytes are shown escaped: a NUL cut the
  // message short where it was printed as a C string.
  EXPECT_EQ(refusal("t", {{"a\"; DROP TABLE t; --", ColumnType::int64}}),
            std::string("auditpipe: schema for table \"t\": column \"a\\x22; DROP TABLE t; --\": "
                        "the name ") +
                not_identifier);
  EXPECT_EQ(refusal("t", {{std::string("a\0b\n", 4), ColumnType::int64}}),
            std::string("auditpipe: schema for table \"t\": column \"a\\x00b\\x0a\": the name ") +
                not_identifier);
  // Outside printable ASCII, every byte: a C1 control (U+009B, CSI) is an
  // escape sequence to a terminal, and a cut never splits a character.
  EXPECT_EQ(refusal("t", {{"a\xC2\x9B"
                           "b",
                           ColumnType::int64}}),
            std::string("auditpipe: schema for table \"t\": column \"a\\xc2\\x9bb\": the name ") +
                not_identifier);
  const std::string long_name(200, 'x');
  EXPECT_EQ(refusal("t", {{long_name + "-", ColumnType::int64}}),
            "auditpipe: schema for table \"t\": column \"" + std::string(80, 'x') +
                "... (201 bytes)\": the name " + not_identifier);
}

TEST(Schema, RefusesTheReservedNamesInAnyCase) {
  for (const char* name : {"source_id", "seq", "SEQ", "Source_Id"}) {
    EXPECT_EQ(refusal("t", {{"a", ColumnType::int64}, {name, ColumnType::int64}}),
              std::string("auditpipe: schema for table \"t\": column \"") + name +
                  "\": source_id and seq are reserved column names (every table gets them)");
  }
}

TEST(Schema, RefusesDuplicateNamesIgnoringCase) {
  EXPECT_EQ(refusal("t", {{"user_name", ColumnType::text, 8},
                          {"at", ColumnType::timestamp},
                          {"User_Name", ColumnType::int64}}),
            "auditpipe: schema for table \"t\": column \"User_Name\": the name is already "
            "column \"user_name\"'s (names are compared ignoring case)");
}

TEST(Schema, RefusesTextSizesOutsideOneByteTo16MiB) {
  EXPECT_EQ(refusal("t", {{"body", ColumnType::text, 0}}),
            "auditpipe: schema for table \"t\": column \"body\": a text column's max_length "
            "must be from 1 to 16777216 bytes (16 MiB), not 0");
  EXPECT_EQ(refusal("t", {{"body", ColumnType::text, (1u << 24) + 1}}),
            "auditpipe: schema for table \"t\": column \"body\": a text column's max_length "
            "must be from 1 to 16777216 bytes (16 MiB), not 16777217");
}

TEST(Schema, RefusesAMaxLengthForAColumnThatIsNotText) {
  EXPECT_EQ(refusal("t", {{"n", ColumnType::int64, 10}}),
            "auditpipe: schema for table \"t\": column \"n\": max_length is for text columns "
            "only (this one is int64)");
}

TEST(Schema, RefusesALimitOfCharactersAboveTheBytesOrForAColumnThatIsNotText) {
  ColumnSpec text{"name", ColumnType::text, 8};
  text.max_chars = 9;
  EXPECT_EQ(refusal("t", {text}),
            "auditpipe: schema for table \"t\": column \"name\": max_chars (9) cannot be more "
            "than max_length (8 bytes): a character takes at least a byte");
  ColumnSpec number{"n", ColumnType::int32};
  number.max_chars = 4;
  EXPECT_EQ(refusal("t", {number}),
            "auditpipe: schema for table \"t\": column \"n\": max_chars is for text columns "
            "only (this one is int32)");
  text.max_chars = 8;
  const auditpipe::Schema ok("t", {text});
  EXPECT_EQ(ok.descriptor().columns[0].max_chars, 8u);
  EXPECT_EQ(ok.columns()[0].max_chars, 8u);
}

TEST(Schema, RefusesATableWithoutColumns) {
  EXPECT_EQ(refusal("t", {}),
            "auditpipe: schema for table \"t\": a table needs at least one column");
}

TEST(Schema, RefusesAnUnknownColumnType) {
  EXPECT_EQ(refusal("t", {{"x", static_cast<ColumnType>(200)}}),
            "auditpipe: schema for table \"t\": column \"x\": unknown column type 200");
}

TEST(Schema, RefusesARecordLargerThanADescriptorCanSay) {
  std::vector<ColumnSpec> huge;
  for (int i = 0; i < 300; ++i) {
    huge.push_back({"c" + std::to_string(i), ColumnType::text, 1u << 24});
  }
  EXPECT_EQ(refusal("t", huge),
            "auditpipe: schema for table \"t\": column \"c255\": the record would be larger "
            "than 4 GiB (a descriptor's sizes are 32-bit)");
}

TEST(Schema, FindsColumnsIgnoringCase) {
  const Schema s("t", {{"at", ColumnType::timestamp}, {"User", ColumnType::text, 4}});
  EXPECT_EQ(s.find("user"), 1u);
  EXPECT_EQ(s.find("AT"), 0u);
  EXPECT_EQ(s.find("nobody"), std::nullopt);
  EXPECT_EQ(s.table(), "t");
  ASSERT_EQ(s.columns().size(), 2u);
  EXPECT_EQ(s.columns()[1].max_length, 4u);
}

TEST(Schema, KeepsTheColumnsAsGivenWithTheirDefaults) {
  const Schema s("t", {{"n", ColumnType::int64, 0, true, "42"}});
  EXPECT_EQ(s.columns()[0].default_value, "42");
  EXPECT_TRUE(s.columns()[0].nullable);
}

// Each descriptor's bytes (names included) live in its own Schema.
void expect_describes_own_storage(const Schema& s) {
  const TableDescriptor& d = s.descriptor();
  EXPECT_EQ(d.name, "audit_log");
  EXPECT_EQ(d.name.data(), s.table().data());
  ASSERT_EQ(d.columns.size(), 2u);
  EXPECT_EQ(d.columns[0].name, "a_rather_long_column_name_beyond_any_small_string_buffer");
  EXPECT_EQ(d.columns[0].name.data(), s.columns()[0].name.data());
  EXPECT_EQ(d.columns[1].name, "b");
  EXPECT_EQ(d.record_size, 24u);  // 8 + fixed_string<4>'s 12, rounded to 8
}

TEST(Schema, CopiesAndMovesKeepTheDescriptorValid) {
  auto original = std::make_unique<Schema>(
      "audit_log",
      std::vector<ColumnSpec>{
          {"a_rather_long_column_name_beyond_any_small_string_buffer", ColumnType::int64},
          {"b", ColumnType::text, 4}});
  Schema copy(*original);
  expect_describes_own_storage(copy);
  EXPECT_NE(copy.descriptor().prototype, original->descriptor().prototype);
  Schema assigned("x", {{"y", ColumnType::boolean}});
  assigned = copy;
  const TableDescriptor* before_move = &copy.descriptor();
  Schema moved(std::move(copy));
  EXPECT_EQ(&moved.descriptor(), before_move);  // the storage moved with it, unchanged
  Schema move_assigned("x", {{"y", ColumnType::boolean}});
  move_assigned = std::move(moved);
  original.reset();  // nothing refers back to the first
  expect_describes_own_storage(assigned);
  expect_describes_own_storage(move_assigned);
  // A moved-from Schema describes nothing, safely.
  EXPECT_TRUE(moved.descriptor().columns.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.table(), "");                     // NOLINT(bugprone-use-after-move)
}

}  // namespace
