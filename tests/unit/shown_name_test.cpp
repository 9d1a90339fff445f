// shown_catalog_name(): a name from a database's catalog in a message. Its
// printable characters read as themselves, any script; what could end the
// message or drive a terminal (controls, format characters, bytes that are
// not UTF-8) is shown as \xNN.
#include <gtest/gtest.h>

#include <string>

#include "auditpipe/detail/shown_name.h"

namespace {

using auditpipe::detail::shown_catalog_name;

TEST(ShownCatalogName, KeepsPrintableCharactersOfAnyScript) {
  EXPECT_EQ(shown_catalog_name("user_name"), "user_name");
  EXPECT_EQ(shown_catalog_name("\xE7\x94\xA8\xE6\x88\xB7"), "\xE7\x94\xA8\xE6\x88\xB7");  // 用户
  EXPECT_EQ(shown_catalog_name("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST(ShownCatalogName, EscapesControlsFormatCharactersAndBytesThatAreNotUtf8) {
  EXPECT_EQ(shown_catalog_name(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(shown_catalog_name("a\x1b[31mb"), "a\\x1b[31mb");  // ESC
  EXPECT_EQ(shown_catalog_name("a\xC2\x9B"
                               "b"),
            "a\\xc2\\x9bb");  // C1 CSI
  EXPECT_EQ(shown_catalog_name("a\xE2\x80\xAE"
                               "b"),
            "a\\xe2\\x80\\xaeb");                                    // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(shown_catalog_name("a\xFF\xC3"), "a\\xff\\xc3");         // not UTF-8
  EXPECT_EQ(shown_catalog_name("\xC0\xAF"), "\\xc0\\xaf");           // overlong
  EXPECT_EQ(shown_catalog_name("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(shown_catalog_name("a\"\\b"), "a\\x22\\x5cb");
}

TEST(ShownCatalogName, CutsALongNameBetweenCharacters) {
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xE7\x94\xA8";  // 120 bytes
  const std::string shown = shown_catalog_name(name);
  EXPECT_EQ(shown, name.substr(0, 81) + "... (120 bytes)");  // 27 whole characters
}

}  // namespace
