#include "auditpipe/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace std::string_literals;

// `text` repaired in a buffer of `capacity` bytes.
std::string repaired(const std::string& text, std::size_t capacity = 64, bool* cut = nullptr) {
  std::string buffer = text;
  buffer.resize(std::max(text.size(), capacity));
  const std::size_t n = auditpipe::repair_utf8(buffer.data(), text.size(), capacity, cut);
  return buffer.substr(0, n);
}

const std::string fffd = "\xEF\xBF\xBD";

TEST(Utf8, WellFormedTextIsValidAndUnchanged) {
  for (const std::string& s : {"plain ascii"s, "caf\xC3\xA9"s, "\xE2\x82\xAC \xF0\x9F\x98\x80"s,
                               "nul\0inside"s, ""s, "\xF4\x8F\xBF\xBF"s /* U+10FFFF */}) {
    EXPECT_TRUE(auditpipe::is_valid_utf8(s)) << s;
    std::string copy = s;
    EXPECT_EQ(auditpipe::repair_utf8(copy.data(), copy.size(), copy.size()), s.size());
    EXPECT_EQ(copy, s);
  }
}

TEST(Utf8, IllFormedSequencesAreEachReplacedOnce) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"a\xFF"
       "b",
       "a" + fffd + "b"},                               // a byte that is never UTF-8
      {"\xC0\x80", fffd + fffd},                        // overlong NUL
      {"\xE0\x80\xAF", fffd + fffd + fffd},             // overlong slash
      {"\xED\xA0\x80", fffd + fffd + fffd},             // a surrogate
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"x\xE2\x82", "x" + fffd},                        // truncated at the end: one subpart
      {"\xE2\x82y", fffd + "y"},                        // truncated before ASCII
      {"\x80\x80", fffd + fffd},                        // lone continuation bytes
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(auditpipe::is_valid_utf8(c.in)) << c.in;
    const std::string out = repaired(c.in);
    EXPECT_EQ(out, c.out) << c.in;
    EXPECT_TRUE(auditpipe::is_valid_utf8(out));
  }
}

TEST(Utf8, RepairsThatDoNotFitAreCutAtACharacterBoundary) {
  bool cut = false;
  // 4 bytes, 2 invalid: the repair needs 2 + 2*3 = 8 bytes but has 5.
  const std::string out = repaired("ab\xFF\xFF", 5, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(out, "ab" + fffd);
  EXPECT_TRUE(auditpipe::is_valid_utf8(out));
}

TEST(Utf8, NulBytesCanBeReplacedForTargetsThatCannotStoreThem) {
  std::string text = "a\0b\0"s;
  text.resize(16);
  bool cut = true;
  const std::size_t n = auditpipe::replace_nul(text.data(), 4, 16, &cut);
  EXPECT_EQ(text.substr(0, n), "a" + fffd + "b" + fffd);
  EXPECT_FALSE(cut);
  // Not enough room: whole characters are dropped from the end.
  std::string tight = "\xC3\xA9\0xy"s;  // é NUL x y: 5 bytes, 7 after the repair
  const std::size_t m = auditpipe::replace_nul(tight.data(), 5, 5, &cut);
  EXPECT_EQ(tight.substr(0, m), "\xC3\xA9" + fffd);
  EXPECT_TRUE(cut);
  std::string none = "plain";
  EXPECT_EQ(auditpipe::replace_nul(none.data(), 5, 5), 5u);
}

}  // namespace
