// The SQL text helpers auditpipe::Database builds on (sql_dialect.h): where a
// statement's ? placeholders are, and which catalog defaults are plain
// literals.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/sink/sql_dialect.h"

namespace {

using auditpipe::sql_default_is_computed;
using auditpipe::sql_literal_value;
using auditpipe::sql_placeholders;
using Offsets = std::vector<std::size_t>;

TEST(SqlPlaceholders, OnlyOutsideLiteralsNamesAndComments) {
  EXPECT_EQ(sql_placeholders("SELECT ?, ?", false), (Offsets{7, 10}));
  EXPECT_EQ(sql_placeholders("SELECT '?', \"a?\", ? -- ?\n, /* ? */ ?", false), (Offsets{18, 35}));
  // '' inside a literal is a quote, not its end.
  EXPECT_EQ(sql_placeholders("SELECT 'it''s ?', ?", false), (Offsets{18}));
  // Standard strings keep backslashes; E'...' escapes with them.
  EXPECT_EQ(sql_placeholders("SELECT '\\', ?", false), (Offsets{12}));
  EXPECT_EQ(sql_placeholders("SELECT E'\\' ?', ?", false), (Offsets{16}));
  // PostgreSQL's dollar quotes, but not its $1.
  EXPECT_EQ(sql_placeholders("SELECT $$ ? $$, $tag$ ? $tag$, ?", false), (Offsets{31}));
  EXPECT_EQ(sql_placeholders("SELECT $1, ?", false), (Offsets{11}));
  // MySQL: backslash escapes in both string quotes, backquoted names, # comments.
  EXPECT_EQ(sql_placeholders("SELECT 'a\\' ?', `x?`, \"\\\" ?\", ? # ?", true), (Offsets{30}));
  EXPECT_TRUE(sql_placeholders("SELECT 1", true).empty());
  // An unterminated literal hides the rest.
  EXPECT_TRUE(sql_placeholders("SELECT 'abc ?", false).empty());
}

TEST(SqlLiteralValue, LiteralsOnly) {
  EXPECT_EQ(sql_literal_value("'abc'", false), "abc");
  EXPECT_EQ(sql_literal_value("'it''s'", false), "it's");
  EXPECT_EQ(sql_literal_value("'a\\'b'", true), "a'b");
  EXPECT_EQ(sql_literal_value("'a\\nb'", false), "a\\nb");
  EXPECT_EQ(sql_literal_value("''", false), "");
  EXPECT_EQ(sql_literal_value("'NULL'", false), "NULL");  // a text, not the keyword
  EXPECT_EQ(sql_literal_value("42", false), "42");
  EXPECT_EQ(sql_literal_value("-1.5", false), "-1.5");
  EXPECT_EQ(sql_literal_value("1e-3", false), "1e-3");
  EXPECT_EQ(sql_literal_value("true", false), "true");
  // PostgreSQL's forms: casts stripped, parentheses around negatives.
  EXPECT_EQ(sql_literal_value("'x'::character varying", false), "x");
  EXPECT_EQ(sql_literal_value("'a::b'::text", false), "a::b");
  EXPECT_EQ(sql_literal_value("'-1'::integer", false), "-1");
  EXPECT_EQ(sql_literal_value("(-1)", false), "-1");
  EXPECT_EQ(sql_literal_value("'2024-01-01 00:00:00+00'::timestamp with time zone", false),
            "2024-01-01 00:00:00+00");
  // NULL and anything computed are no value a loader could repeat.
  for (const char* e :
       {"NULL", "NULL::character varying", "now()", "CURRENT_TIMESTAMP", "current_timestamp(6)",
        "nextval('t_id_seq'::regclass)", "'a' || 'b'", "1 + 1", "uuid()", "", "'unterminated"}) {
    EXPECT_EQ(sql_literal_value(e, false), std::nullopt) << e;
  }
}

TEST(SqlDefaultIsComputed, ExpressionsButNotLiteralsOrNull) {
  for (const char* e : {"now()", "CURRENT_TIMESTAMP", "current_timestamp(6)",
                        "nextval('t_id_seq'::regclass)", "'a' || 'b'", "1 + 1", "(uuid())"}) {
    EXPECT_TRUE(sql_default_is_computed(e, false)) << e;
  }
  for (const char* e : {"NULL", "null", "NULL::character varying", "(NULL)", "'x'", "42",
                        "'2024-01-01'::date", "(-1)"}) {
    EXPECT_FALSE(sql_default_is_computed(e, false)) << e;
  }
}

}  // namespace
