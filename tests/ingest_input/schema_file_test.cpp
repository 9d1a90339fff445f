// Schema files read and written; schema inference from JSON and CSV samples.
#include "input/schema_file.h"

#include <gtest/gtest.h>

#include "auditpipe/status.h"
#include "ingest_test_util.h"
#include "input/row_mapper.h"
#include "input/schema_inference.h"

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using namespace auditpipe::ingest;

std::string error_of(std::string_view json) {
  try {
    parse_schema_json(json, "s.json");
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SchemaFile, ReadsTheDocumentedExample) {
  testing_support::TempDir dir;
  ingest_test::write_file(dir.file("s.json"),
                          R"({"table":"audit_log","columns":[{"name":"at","type":"timestamp"},)"
                          R"({"name":"user_name","type":"text","size":64,"nullable":true,)"
                          R"("default":"nobody","path":"user.name"},)"
                          R"({"name":"level","type":"uint8","default":3}]})");
  const SchemaFile s = read_schema_file(dir.file("s.json"));
  EXPECT_EQ(s.table, "audit_log");
  ASSERT_EQ(s.columns.size(), 3u);
  EXPECT_EQ(s.columns[0].name, "at");
  EXPECT_EQ(s.columns[0].type, ColumnType::timestamp);
  EXPECT_FALSE(s.columns[0].nullable);
  EXPECT_EQ(s.columns[1].type, ColumnType::text);
  EXPECT_EQ(s.columns[1].max_length, 64u);
  EXPECT_TRUE(s.columns[1].nullable);
  EXPECT_EQ(s.columns[1].default_value, "nobody");
  EXPECT_EQ(s.columns[2].default_value, "3");
  ASSERT_EQ(s.paths.size(), 1u);
  EXPECT_EQ(s.paths[0], (std::pair<std::string, std::string>{"user_name", "user.name"}));
}

TEST(SchemaFile, RoundTripsThroughToSchemaJson) {
  const std::vector<ColumnSpec> cols = {{"at", ColumnType::timestamp},
                                        {"who", ColumnType::text, 64, true, "no\"body", false, 16},
                                        {"n", ColumnType::int16, 0, false, "0"},
                                        {"ok", ColumnType::boolean}};
  const std::string text = to_schema_json("t1", cols, {{"who", "user.name"}});
  EXPECT_EQ(text,
            "{\n  \"table\": \"t1\",\n  \"columns\": [\n"
            "    {\"name\": \"at\", \"type\": \"timestamp\"},\n"
            "    {\"name\": \"who\", \"type\": \"text\", \"size\": 64, \"chars\": 16, "
            "\"nullable\": true, "
            "\"default\": \"no\\\"body\", \"path\": \"user.name\"},\n"
            "    {\"name\": \"n\", \"type\": \"int16\", \"default\": \"0\"},\n"
            "    {\"name\": \"ok\", \"type\": \"boolean\"}\n  ]\n}\n");
  const SchemaFile back = parse_schema_json(text, "x");
  ASSERT_EQ(back.columns.size(), 4u);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    EXPECT_EQ(back.columns[i].name, cols[i].name);
    EXPECT_EQ(back.columns[i].type, cols[i].type);
    EXPECT_EQ(back.columns[i].max_length, cols[i].max_length);
    EXPECT_EQ(back.columns[i].max_chars, cols[i].max_chars);
    EXPECT_EQ(back.columns[i].nullable, cols[i].nullable);
    EXPECT_EQ(back.columns[i].default_value, cols[i].default_value);
  }
  EXPECT_EQ(back.paths.size(), 1u);
}

TEST(SchemaFile, EveryTypeNameIsAccepted) {
  for (int t = 0; t <= static_cast<int>(ColumnType::text); ++t) {
    const auto type = static_cast<ColumnType>(t);
    const std::string size = type == ColumnType::text ? ",\"size\":8" : "";
    const auto s =
        parse_schema_json(R"({"table":"t","columns":[{"name":"c","type":")" +
                              std::string(auditpipe::to_string(type)) + "\"" + size + "}]}",
                          "x");
    EXPECT_EQ(s.columns[0].type, type);
  }
}

TEST(SchemaFile, ErrorsNameTheFileTheColumnAndTheProblem) {
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
  };
  std::string e = error_of(R"({"table":"t","columns":[{"name":"a","type":"int64"},{"name":"b"}]})");
  EXPECT_TRUE(has(e, "s.json") && has(e, "column 2 (b)") && has(e, "no \"type\"")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"integer"}]})");
  EXPECT_TRUE(has(e, "column 1 (a)") && has(e, "unknown type \"integer\"") && has(e, "int64")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"int64","size":8}]})");
  EXPECT_TRUE(has(e, "\"size\" is for text columns only")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"text"}]})");
  EXPECT_TRUE(has(e, "needs a \"size\"")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"int64","colour":1}]})");
  EXPECT_TRUE(has(e, "unknown key \"colour\"")) << e;
  e = error_of(R"({"table":"t","columns":[],"extra":1})");
  EXPECT_TRUE(has(e, "unknown key \"extra\"")) << e;
  e = error_of(R"({"columns":[]})");
  EXPECT_TRUE(has(e, "no \"table\"")) << e;
  e = error_of(R"({"table":"t","columns":[)");
  EXPECT_TRUE(has(e, "not valid JSON")) << e;
  // A name holding a NUL and an escape sequence: shown escaped, and the
  // reason after it is still there (a NUL ended the message before).
  e = error_of(R"({"table":"t","columns":[{"name":"a\u0000\u001b[31mRED","type":"text"}]})");
  EXPECT_TRUE(has(e, "column 1 (a\\x00\\x1b[31mRED): a text column needs a \"size\"")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"x\u001by"}]})");
  EXPECT_TRUE(has(e, "unknown type \"x\\x1by\"")) << e;
  // "chars": at most "size", for text only.
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"text","size":8,"chars":9}]})");
  EXPECT_TRUE(has(e, "\"chars\" (9) is more than \"size\" (8 bytes)")) << e;
  e = error_of(R"({"table":"t","columns":[{"name":"a","type":"int64","chars":9}]})");
  EXPECT_TRUE(has(e, "\"chars\" is for text columns only")) << e;
  EXPECT_THROW(read_schema_file("/nonexistent/schema.json"), auditpipe::error);
}

TEST(SchemaInference, JsonTypesNestingNullsAndNames) {
  const std::vector<std::string> recs = {
      R"({"at":"2026-11-30T12:34:56Z","n":1,"f":1,"ok":true,"user":{"name":"ann","id":7},"msg":"hi","1st":"x","a-b":1,"seq":3})",
      R"({"at":"2026-11-30 12:00:00+02:00","n":2,"f":2.5,"ok":false,"user":{"name":"bob"},"msg":"hello there","1st":"y","a-b":2,"seq":4,"later":null})",
      R"(not json)",
  };
  const InferredColumns inf = infer_columns(recs, Format::jsonl);
  EXPECT_EQ(inf.unparsed, 1u);
  EXPECT_EQ(inf.first_unparsed_record, 3u);
  EXPECT_TRUE(inf.first_unparsed_reason.starts_with("not JSON")) << inf.first_unparsed_reason;
  std::map<std::string, ColumnSpec> by;
  for (const auto& c : inf.columns) by[c.name] = c;
  EXPECT_EQ(by.at("at").type, ColumnType::timestamp);
  EXPECT_EQ(by.at("n").type, ColumnType::int64);
  EXPECT_EQ(by.at("f").type, ColumnType::float64);
  EXPECT_EQ(by.at("ok").type, ColumnType::boolean);
  EXPECT_EQ(by.at("user_name").type, ColumnType::text);
  EXPECT_EQ(by.at("user_name").max_length, 16u);
  EXPECT_FALSE(by.at("user_name").nullable);
  EXPECT_TRUE(by.at("user_id").nullable);
  EXPECT_EQ(by.at("msg").max_length, 32u);  // 2 x 11 -> 32
  EXPECT_TRUE(by.at("later").nullable);
  EXPECT_TRUE(by.count("_1st"));
  EXPECT_TRUE(by.count("a_b"));
  EXPECT_TRUE(by.count("seq_2"));  // seq is reserved
  auto path_of = [&](const std::string& name) {
    for (const auto& [c, p] : inf.paths)
      if (c == name) return p;
    return std::string();
  };
  EXPECT_EQ(path_of("user_name"), "user.name");
  EXPECT_EQ(path_of("_1st"), "1st");
  EXPECT_EQ(path_of("seq_2"), "seq");
  EXPECT_EQ(path_of("n"), "");
  // The result maps back with RowMapper-compatible paths and round-trips.
  EXPECT_NO_THROW(parse_schema_json(to_schema_json("t", inf.columns, inf.paths), "x"));
}

TEST(SchemaInference, MixedKindsAndDuplicateNames) {
  const std::vector<std::string> recs = {R"({"v":1,"A.b":1,"a":{"b":2},"t":"2026-11-30"})",
                                         R"({"v":"x","A.b":2,"a":{"b":3},"t":"soon"})"};
  const InferredColumns inf = infer_columns(recs, Format::jsonl);
  ASSERT_EQ(inf.columns.size(), 4u);
  EXPECT_EQ(inf.columns[0].type, ColumnType::text);  // number and string
  EXPECT_EQ(inf.columns[1].name, "A_b");
  EXPECT_EQ(inf.columns[2].name, "a_b_2");           // ignoring case, A_b is taken
  EXPECT_EQ(inf.columns[3].type, ColumnType::text);  // not a timestamp in every sample
  EXPECT_EQ(sanitize_identifier(std::string(100, 'x')).size(), 64u);
  EXPECT_EQ(sanitize_identifier(""), "_");
}

TEST(SchemaInference, CsvFromTheHeaderAndValues) {
  const std::vector<std::string> recs = {"id,price,ok,at,name,maybe", "1,2.5,true,2026-11-30,ann,",
                                         "2,3,FALSE,2026-11-30T01:02:03Z,\"b, c\",7"};
  const InferredColumns inf = infer_columns(recs, Format::csv);
  ASSERT_EQ(inf.columns.size(), 6u);
  EXPECT_EQ(inf.columns[0].type, ColumnType::int64);
  EXPECT_EQ(inf.columns[1].type, ColumnType::float64);
  EXPECT_EQ(inf.columns[2].type, ColumnType::boolean);
  EXPECT_EQ(inf.columns[3].type, ColumnType::timestamp);
  EXPECT_EQ(inf.columns[4].type, ColumnType::text);
  EXPECT_EQ(inf.columns[5].type, ColumnType::int64);
  EXPECT_TRUE(inf.columns[5].nullable);
  EXPECT_FALSE(inf.columns[0].nullable);
  EXPECT_THROW(infer_columns({"a,b"}, Format::csv), auditpipe::error);
}

// What --infer writes, a load must take: a field null in one line and an
// object in the others is the object's columns (nullable), not a column of
// its own that reads them too; a CSV header naming a field twice is refused
// here, as a load refuses it.
TEST(SchemaInference, WhatItInfersALoadCanMap) {
  const std::vector<std::string> recs = {R"({"user":{"name":"ann","id":1},"n":1})",
                                         R"({"user":null,"n":2})",
                                         R"({"user":{"name":"bob","id":2},"n":3})"};
  const InferredColumns inf = infer_columns(recs, Format::jsonl);
  ASSERT_EQ(inf.columns.size(), 3u);
  EXPECT_EQ(inf.columns[0].name, "user_name");
  EXPECT_TRUE(inf.columns[0].nullable);
  EXPECT_EQ(inf.columns[1].name, "user_id");
  EXPECT_EQ(inf.columns[2].name, "n");
  EXPECT_NO_THROW(RowMapper(inf.columns, Format::jsonl, MappingOptions{inf.paths, {}, {}}));

  try {
    infer_columns({"ts,action,action", "1,a,b"}, Format::csv);
    ADD_FAILURE() << "a header naming a field twice was inferred";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("\"action\" more than once"), std::string::npos)
        << e.what();
  }
}

}  // namespace

// What is left out is said, with why: an id beyond 64 bits (simdjson
// refuses its whole line) or a CSV line of another field count, so that a
// column guessed without them is no surprise.
TEST(SchemaInference, SaysWhichRecordItLeftOutAndWhy) {
  const std::vector<std::string> json = {
      R"({"id":1,"big":5})",
      R"({"id":2,"big":18446744073709551616})",
      R"([1,2])",
  };
  InferredColumns inf = infer_columns(json, Format::jsonl);
  EXPECT_EQ(inf.unparsed, 2u);
  EXPECT_EQ(inf.first_unparsed_record, 2u);
  EXPECT_NE(inf.first_unparsed_reason.find("beyond 64 bits"), std::string::npos)
      << inf.first_unparsed_reason;
  const std::vector<std::string> csv = {"a,b", "1,2", "3,4", "5"};
  inf = infer_columns(csv, Format::csv);
  EXPECT_EQ(inf.unparsed, 1u);
  EXPECT_EQ(inf.first_unparsed_record, 3u);  // the third record after the header
  EXPECT_EQ(inf.first_unparsed_reason, "1 fields where the header names 2");
}

// An integer above int64's range but within 64 bits parses (as unsigned):
// its column is text, and that is said, naming the value (a new user's
// all-integer id column came out text in silence).
TEST(SchemaInference, SaysWhyAColumnOfIntegersIsText) {
  const std::vector<std::string> json = {R"({"id":1})", R"({"id":9223372036854775808})",
                                         R"({"id":3,"n":4})"};
  const InferredColumns inf = infer_columns(json, Format::jsonl);
  EXPECT_EQ(inf.unparsed, 0u);
  ASSERT_EQ(inf.columns.size(), 2u);
  EXPECT_EQ(inf.columns[0].type, auditpipe::ColumnType::text);
  EXPECT_EQ(inf.columns[1].type, auditpipe::ColumnType::int64);
  ASSERT_EQ(inf.notes.size(), 1u);
  EXPECT_NE(inf.notes[0].find("id is text"), std::string::npos) << inf.notes[0];
  EXPECT_NE(inf.notes[0].find("9223372036854775808"), std::string::npos) << inf.notes[0];
}
