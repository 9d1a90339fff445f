// RowMapper: JSON and CSV/TSV records mapped onto columns, each column set
// once per record; conversions and their refusals; defaults, NULLs, sets;
// invalid UTF-8 repaired.
#include "input/row_mapper.h"

#include <gtest/gtest.h>

#include <concepts>

#include "auditpipe/dynamic_logger.h"
#include "auditpipe/status.h"
#include "fake_target.h"

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using auditpipe::ingest::Format;
using auditpipe::ingest::MappingOptions;
using auditpipe::ingest::RawRecord;
using auditpipe::ingest::RowMapper;
using ingest_test::FakeTarget;

// A record's text with the padding a RecordReader gives it.
class Padded {
 public:
  explicit Padded(std::string_view text, std::uint64_t line = 1)
      : buf_(std::string(text) + std::string(auditpipe::ingest::record_padding, ' ')) {
    rec_.text = std::string_view(buf_.data(), text.size());
    rec_.line = line;
  }
  const RawRecord& operator*() const { return rec_; }

 private:
  std::string buf_;
  RawRecord rec_;
};

std::vector<ColumnType> types(const std::vector<ColumnSpec>& cols) {
  std::vector<ColumnType> t;
  for (const auto& c : cols) t.push_back(c.type);
  return t;
}

struct Fill {
  bool ok;
  std::string reason;
  std::map<std::size_t, std::string> calls;
};

Fill fill(RowMapper& m, const std::vector<ColumnSpec>& cols, std::string_view text) {
  FakeTarget t(types(cols));
  std::string reason;
  Padded p(text, 7);
  const bool ok = m.fill(*p, t, reason);
  if (ok) {
    EXPECT_EQ(t.calls.size(), cols.size()) << text;
  }
  for (const auto& [c, v] : t.calls) EXPECT_NE(v, "SET TWICE") << c;
  return {ok, reason, t.calls};
}

// The command fills DynamicLogger::Record: fill() calls nothing it lacks.
static_assert(requires(auditpipe::DynamicLogger::Record & r, std::string_view s) {
  r.set_null(std::size_t{0});
  r.set_bool(std::size_t{0}, true);
  { r.set_integer(std::size_t{0}, std::int64_t{1}) } -> std::same_as<bool>;
  r.set_float64(std::size_t{0}, 1.0);
  r.set_timestamp(std::size_t{0}, auditpipe::timestamp{});
  r.set_text(std::size_t{0}, s);
});

const std::vector<ColumnSpec> audit_columns = {
    {"at", ColumnType::timestamp}, {"user_name", ColumnType::text, 64, true},
    {"level", ColumnType::uint8},  {"amount", ColumnType::float64, 0, true},
    {"ok", ColumnType::boolean},   {"id", ColumnType::int64},
};

TEST(RowMapper, JsonEveryTypeAndNestedPath) {
  RowMapper m(audit_columns, Format::jsonl, MappingOptions{{{"user_name", "user.name"}}, {}});
  const auto r = fill(m, audit_columns,
                      R"({"at":"2026-11-30T12:34:56Z","user":{"name":"ann","id":3},"level":7,)"
                      R"("amount":1.25,"ok":true,"id":-9000000000,"extra":[1,2]})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.000000");
  EXPECT_EQ(r.calls.at(1), "text:ann");
  EXPECT_EQ(r.calls.at(2), "int:7");
  EXPECT_EQ(r.calls.at(3), "float:1.250000");
  EXPECT_EQ(r.calls.at(4), "bool:true");
  EXPECT_EQ(r.calls.at(5), "int:-9000000000");
}

TEST(RowMapper, MissingAndNullFields) {
  std::vector<ColumnSpec> cols = audit_columns;
  cols[2].default_value = "3";  // level
  RowMapper m(cols, Format::jsonl);
  auto r = fill(m, cols, R"({"at":1796042096,"user_name":null,"ok":"yes","id":"12"})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.000000");
  EXPECT_EQ(r.calls.at(1), "NULL");
  EXPECT_EQ(r.calls.at(2), "int:3");  // the default
  EXPECT_EQ(r.calls.at(3), "NULL");
  EXPECT_EQ(r.calls.at(4), "bool:true");
  EXPECT_EQ(r.calls.at(5), "int:12");
  r = fill(m, cols, R"({"at":1796042096,"ok":false})");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "missing field \"id\"");
  r = fill(m, cols, R"({"at":1796042096,"ok":false,"id":null})");
  EXPECT_EQ(r.reason, "missing field \"id\"");
  // The mapper keeps no state between records: a good one after a bad one.
  r = fill(m, cols, R"({"at":"2026-11-30","ok":0,"id":1,"level":255})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(2), "int:255");
}

TEST(RowMapper, IntegerConversionsAndRanges) {
  RowMapper m(audit_columns, Format::jsonl);
  const std::string head = R"({"at":0,"ok":1,"id":1,"level":)";
  auto r = fill(m, audit_columns, head + "300}");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "300 is out of range for column level (uint8: 0..255)");
  r = fill(m, audit_columns, head + "-1}");
  EXPECT_EQ(r.reason, "-1 is out of range for column level (uint8: 0..255)");
  r = fill(m, audit_columns, head + "1.5}");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("level"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("fraction"), std::string::npos) << r.reason;
  r = fill(m, audit_columns, head + "\"abc\"}");
  EXPECT_EQ(r.reason, "column level: \"abc\" is not an integer");
  r = fill(m, audit_columns, head + "\"200\"}");
  EXPECT_TRUE(r.ok) << r.reason;
  r = fill(m, audit_columns, head + "2.0}");
  EXPECT_TRUE(r.ok) << r.reason;
  r = fill(m, audit_columns, head + "true}");  // 1 (BooleansIntoIntegerColumnsAreOneAndZero)
  EXPECT_TRUE(r.ok) << r.reason;
  r = fill(m, audit_columns, R"({"at":0,"ok":1,"level":1,"id":18446744073709551615})");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("out of range"), std::string::npos) << r.reason;
}

TEST(RowMapper, BooleansFloatsAndTimestamps) {
  RowMapper m(audit_columns, Format::jsonl);
  auto r =
      fill(m, audit_columns, R"({"at":1796042096123,"ok":"F","id":1,"level":1,"amount":"2.5"})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.123000");
  EXPECT_EQ(r.calls.at(3), "float:2.500000");
  EXPECT_EQ(r.calls.at(4), "bool:false");
  r = fill(m, audit_columns, R"({"at":1796042096.5,"ok":true,"id":1,"level":1,"amount":3})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.500000");
  EXPECT_EQ(r.calls.at(3), "float:3.000000");
  // A JSON number with a seventh digit is the microsecond an ISO time with
  // it is (the double, rounded, was the next one).
  r = fill(m, audit_columns, R"({"at":1796042096.1234567,"ok":true,"id":1,"level":1})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.123456");
  r = fill(m, audit_columns, R"({"at":1796042096.123456,"ok":true,"id":1,"level":1})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "ts:2026-11-30T12:34:56.123456");
  r = fill(m, audit_columns, R"({"at":0,"ok":true,"id":1,"level":1,"amount":"NaN"})");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("amount"), std::string::npos) << r.reason;
  r = fill(m, audit_columns,
           R"({"at":"2026-11-30T14:34:56.25+02:00","ok":"maybe","id":1,"level":1})");
  EXPECT_EQ(r.reason, "column ok: \"maybe\" is not a boolean (true/false, 1/0, t/f, yes/no)");
  r = fill(m, audit_columns, R"({"at":"yesterday","ok":true,"id":1,"level":1})");
  EXPECT_EQ(r.reason, "column at: \"yesterday\" is not a timestamp (ISO 8601 or epoch)");
}

TEST(RowMapper, TextColumnsTakeAnyJsonValue) {
  const std::vector<ColumnSpec> cols = {{"t", ColumnType::text, 100}};
  RowMapper m(cols, Format::jsonl);
  EXPECT_EQ(fill(m, cols, R"({"t":"a\"b\u00e9\n"})").calls.at(0), "text:a\"b\xC3\xA9\n");
  EXPECT_EQ(fill(m, cols, R"({"t":12})").calls.at(0), "text:12");
  EXPECT_EQ(fill(m, cols, R"({"t":-1.5})").calls.at(0), "text:-1.5");
  EXPECT_EQ(fill(m, cols, R"({"t":false})").calls.at(0), "text:false");
  EXPECT_EQ(fill(m, cols, R"({"t":{"a": [1, 2]}})").calls.at(0), "text:{\"a\":[1,2]}");
  EXPECT_EQ(fill(m, cols, R"({"t":[]})").calls.at(0), "text:[]");
  // A long value is cut to ~60 bytes in a message.
  const std::vector<ColumnSpec> ints = {{"n", ColumnType::int32}};
  RowMapper mi(ints, Format::jsonl);
  const auto r = fill(mi, ints, "{\"n\":\"" + std::string(500, 'z') + "\"}");
  EXPECT_LT(r.reason.size(), 120u) << r.reason;
}

TEST(RowMapper, ARepeatedKeyOfAColumnRejectsTheLine) {
  const std::vector<ColumnSpec> cols = {{"a", ColumnType::int64},
                                        {"b", ColumnType::int64, 0, true}};
  RowMapper m(cols, Format::jsonl);
  auto r = fill(m, cols, R"({"a":1,"a":2})");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason,
            "column a: its key \"a\" appears more than once in the line; which value is meant "
            "is not defined, so the line is rejected");
  // The same value twice is as ambiguous to a reader of the rule.
  EXPECT_FALSE(fill(m, cols, R"({"b":1,"a":3,"b":1})").ok);
  // A repeated key no column reads is ignored, as every such key is.
  r = fill(m, cols, R"({"x":1,"a":4,"x":2})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:4");
  // Each line starts afresh.
  EXPECT_TRUE(fill(m, cols, R"({"a":5})").ok);
  // An object on a column's path, repeated: jq's .user.name is null for the
  // first two, and the third would be read as "a" or "b".
  const std::vector<ColumnSpec> nested = {{"name", ColumnType::text, 16, true}};
  RowMapper by_path(nested, Format::jsonl, MappingOptions{{{"name", "user.name"}}, {}});
  for (const char* line :
       {R"({"user":{"name":"a"},"user":null})", R"({"user":{"name":"a"},"user":{}})",
        R"({"user":{"name":"a"},"user":{"name":"b"}})"}) {
    r = fill(by_path, nested, line);
    EXPECT_FALSE(r.ok) << line;
    EXPECT_EQ(r.reason,
              "key \"user\" appears more than once in the line; which value is meant is not "
              "defined, so the line is rejected")
        << line;
  }
  EXPECT_TRUE(fill(by_path, nested, R"({"user":{"name":"c"}})").ok);
}

TEST(RowMapper, JsonErrorsAndNonObjects) {
  const std::vector<ColumnSpec> cols = {{"a", ColumnType::int64, 0, true}};
  RowMapper m(cols, Format::jsonl);
  auto r = fill(m, cols, R"({"a":1)");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("JSON: "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("line 7"), std::string::npos) << r.reason;
  r = fill(m, cols, "[1,2]");
  EXPECT_EQ(r.reason, "not a JSON object (line 7)");
  r = fill(m, cols, R"({"a":1} {"a":2})");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(fill(m, cols, R"({"b":{"deep":[1,{"x":null}]}})").ok);
}

TEST(RowMapper, ANumberBeyondADoubleIsSaidToBeOutOfRange) {
  const std::vector<ColumnSpec> cols = {{"a", ColumnType::float64}};
  RowMapper m(cols, Format::jsonl);
  const auto r = fill(m, cols, R"({"a":1e400})");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("beyond a double's"), std::string::npos) << r.reason;
}

TEST(RowMapper, InvalidUtf8IsRepairedAndCounted) {
  const std::vector<ColumnSpec> cols = {{"t", ColumnType::text, 100}, {"n", ColumnType::int64}};
  RowMapper m(cols, Format::jsonl);
  auto r = fill(m, cols,
                "{\"t\":\"ab\xff\xfe"
                "cd\",\"n\":5}");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0),
            "text:ab\xEF\xBF\xBD\xEF\xBF\xBD"
            "cd");
  EXPECT_EQ(r.calls.at(1), "int:5");
  EXPECT_EQ(m.repaired_lines(), 1u);
  EXPECT_TRUE(fill(m, cols, "{\"t\":\"fine\",\"n\":5}").ok);
  EXPECT_EQ(m.repaired_lines(), 1u);
}

TEST(RowMapper, SetsAndDefaultsAreConvertedOnce) {
  const std::vector<ColumnSpec> cols = {{"host", ColumnType::text, 32},
                                        {"level", ColumnType::uint8},
                                        {"n", ColumnType::int64, 0, false, "17"}};
  RowMapper m(cols, Format::jsonl, MappingOptions{{}, {{"host", "web-1"}, {"level", "4"}}});
  const auto r = fill(m, cols, R"({"host":"ignored","level":99})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "text:web-1");
  EXPECT_EQ(r.calls.at(1), "int:4");
  EXPECT_EQ(r.calls.at(2), "int:17");
  try {
    RowMapper bad(cols, Format::jsonl, MappingOptions{{}, {{"level", "300"}}});
    FAIL();
  } catch (const auditpipe::error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ingest: --set level=300: 300 is out of range for column level (uint8: 0..255)");
  }
  EXPECT_THROW(RowMapper(cols, Format::jsonl, MappingOptions{{{"nope", "x"}}, {}}),
               auditpipe::error);
  std::vector<ColumnSpec> bad_default = cols;
  bad_default[2].default_value = "seventeen";
  EXPECT_THROW(RowMapper(bad_default, Format::jsonl), auditpipe::error);
  // Two columns reading one field, or a field and a part of it.
  EXPECT_THROW(RowMapper(cols, Format::jsonl, MappingOptions{{{"n", "level"}}, {}}),
               auditpipe::error);
  EXPECT_THROW(RowMapper(cols, Format::jsonl, MappingOptions{{{"n", "level.x"}}, {}}),
               auditpipe::error);
}

TEST(RowMapper, CsvHeaderQuotesAndFieldCounts) {
  const std::vector<ColumnSpec> cols = {{"id", ColumnType::int64},
                                        {"msg", ColumnType::text, 64},
                                        {"at", ColumnType::timestamp},
                                        {"note", ColumnType::text, 64, true},
                                        {"n", ColumnType::int32, 0, true}};
  RowMapper m(cols, Format::csv, MappingOptions{{{"msg", "message"}}, {}});
  EXPECT_TRUE(m.needs_header());
  m.set_header(*Padded("\xEF\xBB\xBFid,message,unused,at,note,n"));
  EXPECT_FALSE(m.needs_header());
  auto r = fill(m, cols, "1,\"hello, \"\"world\"\"\nbye\",x,2026-11-30 12:34:56Z,,");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:1");
  EXPECT_EQ(r.calls.at(1), "text:hello, \"world\"\nbye");
  EXPECT_EQ(r.calls.at(2), "ts:2026-11-30T12:34:56.000000");
  EXPECT_EQ(r.calls.at(3), "NULL");  // unquoted empty: NULL
  EXPECT_EQ(r.calls.at(4), "NULL");
  r = fill(m, cols, "2,,x,0,\"\",5");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(1), "text:");  // not nullable, no default: empty text
  EXPECT_EQ(r.calls.at(3), "text:");  // quoted empty: empty text
  EXPECT_EQ(r.calls.at(4), "int:5");
  r = fill(m, cols, "1,a,x,0,b,2,extra");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "7 fields, the header has 6 (line 7)");
  r = fill(m, cols, ",a,x,0,b,2");
  EXPECT_EQ(r.reason, "missing field \"id\"");
}

TEST(RowMapper, CsvHeaderMustCoverTheColumns) {
  const std::vector<ColumnSpec> cols = {{"id", ColumnType::int64},
                                        {"msg", ColumnType::text, 64, true},
                                        {"lvl", ColumnType::int32, 0, false, "1"}};
  RowMapper m(cols, Format::csv);
  try {
    m.set_header(*Padded("msg,other"));
    FAIL();
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("column id"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.set_header(*Padded("id,id,msg")), auditpipe::error);
  // Matched ignoring case by two fields: which is meant is not said (the
  // first was read without a word).
  try {
    m.set_header(*Padded("id,Msg,MSG"));
    FAIL();
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("names \"msg\" 2 times in other cases (Msg, MSG"),
              std::string::npos)
        << e.what();
  }
  m.set_header(*Padded("id,msg,MSG"));  // the exact one is meant
  m.set_header(*Padded("ID,x"));        // case ignored when nothing matches exactly
  const auto r = fill(m, cols, "5,z");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:5");
  EXPECT_EQ(r.calls.at(1), "NULL");
  EXPECT_EQ(r.calls.at(2), "int:1");
}

TEST(RowMapper, CsvFallsBackToTheColumnNameWhenNoHeaderNamesItsPath) {
  // One schema file for JSON and CSV inputs: its path user.name is JSON's.
  const std::vector<ColumnSpec> cols = {{"user_name", ColumnType::text, 16},
                                        {"level", ColumnType::int32}};
  RowMapper m(cols, Format::csv, {{{"user_name", "user.name"}}, {}});
  m.set_header(*Padded("level,user_name"));
  auto r = fill(m, cols, "3,alice");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "text:alice");
  // A header that names the path wins over one naming the column.
  RowMapper both(cols, Format::csv, {{{"user_name", "user.name"}}, {}});
  both.set_header(*Padded("user_name,level,user.name"));
  r = fill(both, cols, "no,4,yes");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "text:yes");
}

TEST(RowMapper, BooleansIntoIntegerColumnsAreOneAndZero) {
  // SQLite and MySQL tables read back with integers where booleans were.
  const std::vector<ColumnSpec> cols = {{"ok", ColumnType::int64}, {"flag", ColumnType::uint8}};
  RowMapper json(cols, Format::jsonl);
  auto r = fill(json, cols, R"({"ok": true, "flag": false})");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:1");
  EXPECT_EQ(r.calls.at(1), "int:0");
  RowMapper csv(cols, Format::csv);
  csv.set_header(*Padded("ok,flag"));
  r = fill(csv, cols, "false,yes");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:0");
  EXPECT_EQ(r.calls.at(1), "int:1");
}

// CSV integers as JSON's: digits past int64 are out of range (they read
// "has a fraction"), and an exponent that makes an integer is one (1e3).
TEST(RowMapper, CsvIntegersOutOfRangeAndWithExponents) {
  const std::vector<ColumnSpec> cols = {{"big", ColumnType::int64}};
  RowMapper csv(cols, Format::csv);
  csv.set_header(*Padded("big"));
  auto r = fill(csv, cols, "9223372036854775808");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "column big: \"9223372036854775808\" is out of range (int64)");
  r = fill(csv, cols, "-99999999999999999999");
  EXPECT_NE(r.reason.find("out of range"), std::string::npos) << r.reason;
  r = fill(csv, cols, "1e3");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "int:1000");
  r = fill(csv, cols, "1.5");
  EXPECT_NE(r.reason.find("has a fraction"), std::string::npos) << r.reason;
  r = fill(csv, cols, "-");
  EXPECT_EQ(r.reason, "column big: \"-\" is not an integer");
}

TEST(RowMapper, TsvFields) {
  const std::vector<ColumnSpec> cols = {{"a", ColumnType::text, 16}, {"b", ColumnType::float64}};
  RowMapper m(cols, Format::tsv);
  m.set_header(*Padded("a\tb"));
  const auto r = fill(m, cols, "x,y\t-0.5");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.calls.at(0), "text:x,y");
  EXPECT_EQ(r.calls.at(1), "float:-0.500000");
}

}  // namespace
