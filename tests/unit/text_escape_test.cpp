// The escape tables of auditpipe/detail/text_escape.h against the escapes
// each target defines, byte by byte: JSON (dead-letter file), COPY text
// (PostgreSQL), LOAD DATA (MySQL) and logfmt (the spdlog line sink). The
// references below are written out the long way, one case per byte.
#include "auditpipe/detail/text_escape.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

namespace {

using auditpipe::detail::append_escaped;
using auditpipe::detail::backslash_escapes;
using auditpipe::detail::EscapeTable;

std::string json_reference(char ch) {
  switch (ch) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      if (static_cast<unsigned char>(ch) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(ch));
        return buf;
      }
      return std::string(1, ch);
  }
}

std::string copy_reference(char ch) {
  switch (ch) {
    case '\\':
      return "\\\\";
    case '\t':
      return "\\t";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    default:
      return std::string(1, ch);
  }
}

std::string load_data_reference(char ch) {
  if (ch == '\0') return "\\0";
  if (ch == '\x1a') return "\\Z";
  return copy_reference(ch);
}

std::string logfmt_reference(char ch) {
  if (ch == '"') return "\\\"";
  if (ch == '\0') return "\\0";
  return copy_reference(ch);
}

template <class Reference>
void expect_every_byte(const EscapeTable& table, Reference reference) {
  std::string all, expected;
  for (int b = std::numeric_limits<char>::min(); b <= std::numeric_limits<char>::max(); ++b) {
    const char ch = static_cast<char>(b);
    std::string one;
    append_escaped(one, std::string_view(&ch, 1), table);
    EXPECT_EQ(one, reference(ch)) << "byte " << (b & 0xff);
    all += ch;
    expected += reference(ch);
  }
  std::string out = "prefix:";
  append_escaped(out, all, table);
  EXPECT_EQ(out, "prefix:" + expected);  // runs and replacements in order
}

TEST(TextEscape, JsonEscapesQuotesBackslashesAndControls) {
  expect_every_byte(auditpipe::detail::json_escapes, json_reference);
  std::string out;
  auditpipe::detail::append_json_string(out, std::string("a\"b\0c", 5));
  EXPECT_EQ(out, "\"a\\\"b\\u0000c\"");
}

TEST(TextEscape, CopyLoadDataAndLogfmtTables) {
  expect_every_byte(backslash_escapes, copy_reference);
  expect_every_byte(backslash_escapes.with('\0', "\\0").with('\x1a', "\\Z"), load_data_reference);
  expect_every_byte(backslash_escapes.with('"', "\\\"").with('\0', "\\0"), logfmt_reference);
}

TEST(TextEscape, NumbersInTheirShortestExactForm) {
  std::string out;
  auditpipe::detail::append_number(out, -9'000'000'000'000'000'000LL);
  out += ' ';
  auditpipe::detail::append_number(out, 0.1);
  EXPECT_EQ(out, "-9000000000000000000 0.1");
}

}  // namespace
