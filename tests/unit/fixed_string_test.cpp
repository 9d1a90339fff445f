#include "auditpipe/fixed_string.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

namespace {

using auditpipe::fixed_string;
using auditpipe::utf8_prefix_chars;
using auditpipe::utf8_prefix_length;

static_assert(std::is_trivially_copyable_v<fixed_string<16>>);
static_assert(std::is_standard_layout_v<fixed_string<16>>);

TEST(FixedString, FitsWithoutTruncation) {
  fixed_string<8> s;
  EXPECT_FALSE(s.assign("abcdefgh"));
  EXPECT_EQ(s.view(), "abcdefgh");
  EXPECT_FALSE(s.truncated());
}

TEST(FixedString, TruncatesAsciiAtCapacity) {
  fixed_string<4> s;
  EXPECT_TRUE(s.assign("abcdef"));
  EXPECT_EQ(s.view(), "abcd");
  EXPECT_TRUE(s.truncated());
}

TEST(FixedString, NeverSplitsAMultiByteCharacter) {
  // "é" is 2 bytes, "€" 3, "😀" 4: each cut must land before the character.
  const std::string two = "ab\xC3\xA9";          // a b é
  const std::string three = "a\xE2\x82\xAC";     // a €
  const std::string four = "a\xF0\x9F\x98\x80";  // a 😀
  fixed_string<3> s2;
  EXPECT_TRUE(s2.assign(two));
  EXPECT_EQ(s2.view(), "ab");
  fixed_string<3> s3;
  EXPECT_TRUE(s3.assign(three));
  EXPECT_EQ(s3.view(), "a");
  for (std::size_t limit = 1; limit < 5; ++limit) {
    EXPECT_EQ(utf8_prefix_length(four, limit), 1u) << "limit " << limit;
  }
  EXPECT_EQ(utf8_prefix_length(four, 5), 5u);
}

TEST(FixedString, CutIsAlwaysAValidBoundaryForEveryLimit) {
  const std::string text = "x\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80y";  // x é € 😀 y
  for (std::size_t limit = 0; limit <= text.size(); ++limit) {
    const std::size_t cut = utf8_prefix_length(text, limit);
    EXPECT_LE(cut, limit);
    if (cut < text.size()) {
      EXPECT_NE(static_cast<unsigned char>(text[cut]) & 0xC0u, 0x80u) << "limit " << limit;
    }
    // No character that fits is dropped: at most 3 bytes are given up.
    EXPECT_GE(cut + 3, limit);
  }
}

TEST(FixedString, CopiesEveryLengthExactlyAndNothingBeyondIt) {
  // Each length through the short-copy paths (under 4, 4-7, 8-15, whole and
  // partial 16-byte blocks, up to the capacity and past it). The source is
  // a heap buffer of exactly that length, so a read past it is an ASan
  // error; the bytes after the copied ones must keep what was there.
  constexpr std::size_t cap = 70;
  for (std::size_t len = 0; len <= cap + 3; ++len) {
    const auto source = std::make_unique<char[]>(len + 1);
    for (std::size_t i = 0; i < len; ++i) source[i] = static_cast<char>('a' + (i * 7 + len) % 26);
    fixed_string<cap> s;
    s.assign(std::string_view(std::string(cap, '#')));
    s.assign(std::string_view(source.get(), len));
    const std::size_t kept = std::min(len, cap);
    ASSERT_EQ(s.size(), kept) << "length " << len;
    EXPECT_EQ(s.view(), std::string_view(source.get(), kept)) << "length " << len;
    EXPECT_EQ(s.truncated(), len > cap) << "length " << len;
    const std::string_view tail(s.data() + kept, cap - kept);
    EXPECT_EQ(tail.find_first_not_of('#'), std::string_view::npos) << "length " << len;
  }
}

TEST(FixedString, InvalidUtf8IsCutAtTheLimit) {
  const std::string junk(10, '\x80');  // continuation bytes only
  EXPECT_EQ(utf8_prefix_length(junk, 6), 6u);
}

TEST(FixedString, APrefixOfCharactersCountsCodePointsNotBytes) {
  const std::string cjk = "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";  // 3 characters, 9 bytes
  EXPECT_EQ(utf8_prefix_chars(cjk, 3), 9u);
  EXPECT_EQ(utf8_prefix_chars(cjk, 2), 6u);
  EXPECT_EQ(utf8_prefix_chars(cjk, 0), 0u);
  EXPECT_EQ(utf8_prefix_chars(cjk, 9), 9u);
  EXPECT_EQ(utf8_prefix_chars("a\xF0\x9F\x98\x80"
                              "b",
                              2),
            5u);  // a, an emoji
  EXPECT_EQ(utf8_prefix_chars("abc", 5), 3u);
  // Continuation bytes only start no character: cut where the next one would.
  EXPECT_EQ(utf8_prefix_chars("a\x80\x80"
                              "b",
                              1),
            3u);
  static_assert(utf8_prefix_chars("abcdef", 4) == 4);
}

TEST(FixedString, KeepsNulBytesAndReportsLaterFits) {
  const std::string with_nul("a\0b", 3);
  fixed_string<8> s;
  EXPECT_FALSE(s.assign(with_nul));
  EXPECT_EQ(s.view(), with_nul);
  s.assign("0123456789");
  EXPECT_TRUE(s.truncated());
  s.assign("ok");
  EXPECT_FALSE(s.truncated());  // the flag describes the last assignment
}

TEST(FixedString, TwoCompareByTheirText) {
  fixed_string<8> a, b;
  a.assign("same");
  b.assign("same");
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  b.assign("other");
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == std::string_view("same"));
  EXPECT_TRUE(std::string_view("same") == a);
  // A cut text compares as what it holds (the flag is not the text).
  fixed_string<4> cut;
  cut.assign("same!");
  EXPECT_TRUE(cut == std::string_view("same"));
}

TEST(FixedString, IsUsableAtCompileTime) {
  constexpr fixed_string<4> s("abcdef");
  static_assert(s.view() == "abcd");
  static_assert(s.truncated());
  SUCCEED();
}

}  // namespace

// An aggregate with a fixed_string member takes a string literal, as the
// README's "implicit" promised (`Row{1, "x"}` did not compile: two
// conversions); a null C string is empty and marked, as assign() makes it.
namespace {
struct LiteralRow {
  int id;
  fixed_string<8> name;
};
}  // namespace

TEST(FixedString, AnAggregateTakesAStringLiteral) {
  const LiteralRow row{1, "x"};
  EXPECT_EQ(row.name, "x");
  const char* none = nullptr;
  const fixed_string<8> empty = none;
  EXPECT_TRUE(empty.empty());
  static_assert(fixed_string<4>("abcdef").size() == 4);
}
