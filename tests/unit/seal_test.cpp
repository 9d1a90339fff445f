// auditpipe/sink/seal.h: the digests against published vectors, the
// canonical bytes, how a seal's rows digest is made, the URL options and
// the key file's refusals.
#include "auditpipe/sink/seal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "auditpipe/status.h"

namespace {

using namespace auditpipe::seal;

TEST(Seal, DigestsMatchPublishedVectors) {
  Sha256 h;
  h.update("ab");
  h.update("c");
  EXPECT_EQ(h.final_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231, test case 2.
  EXPECT_EQ(seal_digest(Mode::hmac, "Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(seal_digest(Mode::hash, "ignored", "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Seal, CanonicalBytesAreFixed) {
  RowEncoder e;
  e.null();
  e.integer(-2);
  e.text("hé");
  e.key(7, 1);
  const std::string expected(
      "\0"
      "\1\xfe\xff\xff\xff\xff\xff\xff\xff"
      "\1\3\0\0\0h\xc3\xa9"
      "\7\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0",
      1 + 9 + 8 + 16);
  EXPECT_EQ(e.bytes(), expected);
  // The message commits to every field, in order.
  EXPECT_EQ(seal_message("p", 3, "1:0-9", 10, "d"), "auditpipe-seal-v1\np\n3\n1:0-9\n10\nd");
  EXPECT_EQ(genesis_digest("t").size(), 64u);
  EXPECT_NE(genesis_digest("t"), genesis_digest("u"));
}

TEST(Seal, RowsDigestIsTheHashOfTheRowsHashes) {
  // rows_digest = SHA-256(SHA-256(row 1) || SHA-256(row 2) || ...), and a
  // row's fingerprint is its SHA-256's first 8 hex digits.
  const RowHash a = row_hash("abc");
  std::string fingerprint;
  a.append_fingerprint(fingerprint);
  EXPECT_EQ(fingerprint, "ba7816bf");
  const RowHash b = row_hash("");
  RowsDigest d;
  d.add(a);
  d.add(b);
  Sha256 expected;
  expected.update({reinterpret_cast<const char*>(a.bytes), 32});
  expected.update({reinterpret_cast<const char*>(b.bytes), 32});
  const std::string hex = expected.final_hex();
  EXPECT_EQ(d.final_hex(), hex);
  RowsDigest swapped;  // the order is part of it
  swapped.add(b);
  swapped.add(a);
  EXPECT_NE(swapped.final_hex(), hex);
  std::string empty_fp;
  b.append_fingerprint(empty_fp);
  EXPECT_EQ(empty_fp, "e3b0c442");  // SHA-256 of nothing
}

TEST(Seal, UrlOptions) {
  SealSettings s;
  EXPECT_TRUE(apply_url_option(s, "seal", "hmac"));
  EXPECT_EQ(s.mode, Mode::hmac);
  EXPECT_TRUE(apply_url_option(s, "seal_key_file", "/k"));
  EXPECT_EQ(s.key_file, "/k");
  EXPECT_TRUE(apply_url_option(s, "seal_anchor_file", "/a"));
  EXPECT_EQ(s.anchor_file, "/a");
  EXPECT_FALSE(apply_url_option(s, "pool_size", "2"));
  EXPECT_THROW(apply_url_option(s, "seal", "md5"), auditpipe::error);
}

TEST(Seal, KeyFileRefusals) {
  const auto dir = std::filesystem::temp_directory_path() / "auditpipe-seal-test";
  std::filesystem::create_directories(dir);
  const std::string key = (dir / "key").string();
  EXPECT_THROW(read_key_file(""), auditpipe::error);
  EXPECT_THROW(read_key_file((dir / "missing").string()), auditpipe::error);
  { std::ofstream(key, std::ios::trunc); }
  ::chmod(key.c_str(), 0600);
  EXPECT_THROW(read_key_file(key), auditpipe::error);  // empty
  { std::ofstream(key, std::ios::trunc) << "secret"; }
  ::chmod(key.c_str(), 0644);
  try {
    read_key_file(key);
    ADD_FAILURE() << "a world-readable key was accepted";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("readable by everyone"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos);
  }
  ::chmod(key.c_str(), 0400);
  EXPECT_EQ(read_key_file(key), "secret");
  std::filesystem::remove_all(dir);
}

}  // namespace
