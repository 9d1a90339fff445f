// auditpipe/sink/seal.h: the digests against published vectors, the
// canonical bytes, how a seal's rows digest is made, the URL options and
// the key file's refusals.
#include "auditpipe/sink/seal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

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
  e.integer(300);
  e.text("hé");
  e.float64(1.5);
  e.key(7, 1);
  const std::string expected(
      "\0"
      "\1\x03"
      "\1\xd8\x04"
      "\1\3h\xc3\xa9"
      "\1\0\0\0\0\0\0\xf8\x3f"
      "\x0e\x02",
      1 + 2 + 3 + 5 + 9 + 2);
  EXPECT_EQ(e.bytes(), expected);
  // The extremes of int64 round the zigzag varint's 10 bytes.
  e.clear();
  e.integer(std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(e.bytes(), std::string("\1\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  e.clear();
  e.integer(std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(e.bytes(), std::string("\1\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  // -0.0 is encoded as 0.0: SQLite and MariaDB give it back as 0.
  e.clear();
  e.float64(-0.0);
  EXPECT_EQ(e.bytes(), std::string("\1\0\0\0\0\0\0\0\0", 9));
  // The message commits to every field, in order.
  EXPECT_EQ(seal_message("p", 3, 1764504000000001, "1:0-9", 10, "d"),
            "auditpipe-seal-v4\np\n3\n1764504000000001\n1:0-9\n10\nd");
  EXPECT_EQ(genesis_digest("t").size(), 64u);
  EXPECT_NE(genesis_digest("t"), genesis_digest("u"));
}

TEST(Seal, RowsDigestHashesTheRowsBytesInOrder) {
  // rows_digest = SHA-256(row 1 || row 2 || ...).
  RowsDigest d;
  d.add("ab");
  d.add("c");
  EXPECT_EQ(d.final_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  RowsDigest swapped;  // the order is part of it
  swapped.add("c");
  swapped.add("ab");
  EXPECT_NE(swapped.final_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Seal, AKeyedRowsDigestIsPoly1305UnderTheDerivedKey) {
  // RFC 8439, section 2.5.2: Poly1305's test vector.
  const std::string key(
      "\x85\xd6\xbe\x78\x57\x55\x6d\x33\x7f\x44\x52\xfe\x42\xd5\x06\xa8"
      "\x01\x03\x80\x8a\xfb\x0d\xb2\xfd\x4a\xbf\xf6\xaf\x41\x49\xf5\x1b",
      32);
  RowsDigest d(key);
  d.add("Cryptographic Forum ");
  d.add("Research Group");
  EXPECT_EQ(d.final_hex(), "a8061dc1305136c6c22b8baf0c0127a9");
  // HMAC-SHA-256(seal key, "auditpipe-seal-rows-key"), as `openssl dgst
  // -sha256 -hmac Jefe` gives it.
  EXPECT_EQ(to_hex(rows_key("Jefe")),
            "382815498e9a46822299eccfd15e1c30e9177b88891590adb98ee35dc6058e06");
  EXPECT_THROW(RowsDigest("short"), auditpipe::error);
}

TEST(Seal, ARowsDigestIsOfTheBytesWhateverTheCalls) {
  // The writer hashes 64 KiB of rows per call, verify one row per call: both
  // must give one digest. Rows of uneven length, past several 64 KiB chunks.
  std::string rows;
  std::vector<std::size_t> ends;
  for (int i = 0; i < 3000; ++i) {
    rows.append(static_cast<std::size_t>(1 + (i * 37) % 251), static_cast<char>('a' + i % 26));
    ends.push_back(rows.size());
  }
  for (const std::string& key : {std::string(), rows_key("k")}) {
    const auto make = [&] { return key.empty() ? RowsDigest() : RowsDigest(key); };
    RowsDigest whole = make();
    whole.add(rows);
    RowsDigest by_row = make();
    std::size_t at = 0;
    for (std::size_t end : ends) {
      by_row.add(std::string_view(rows).substr(at, end - at));
      at = end;
    }
    RowsDigest by_chunk = make();
    for (std::size_t i = 0; i < rows.size(); i += 65536) {
      by_chunk.add(std::string_view(rows).substr(i, 65536));
    }
    const std::string expected = whole.final_hex();
    EXPECT_EQ(by_row.final_hex(), expected) << (key.empty() ? "SHA-256" : "Poly1305");
    EXPECT_EQ(by_chunk.final_hex(), expected) << (key.empty() ? "SHA-256" : "Poly1305");
  }
  // Another key, or none, gives another digest.
  RowsDigest k1(rows_key("k")), k2(rows_key("l")), plain;
  for (RowsDigest* d : {&k1, &k2, &plain}) d->add(rows);
  const std::string a = k1.final_hex(), b = k2.final_hex(), c = plain.final_hex();
  EXPECT_NE(a, b);
  EXPECT_NE(a, c.substr(0, a.size()));
}

TEST(Seal, FingerprintIsCrc32cAsHex) {
  // RFC 3720's check value of CRC-32C, and its test vectors (32 zero bytes,
  // 32 bytes 0x00..0x1f): past the 8-byte words, and their tails.
  std::string out;
  append_fingerprint(out, fingerprint("123456789"));
  EXPECT_EQ(out, "e3069283");
  EXPECT_EQ(fingerprint(std::string(32, '\0')), 0x8A9136AAu);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(fingerprint(ascending), 0x46DD794Eu);
  EXPECT_EQ(fingerprint(""), 0u);
  out.clear();
  append_fingerprint(out, 0x0000abcdu);
  EXPECT_EQ(out, "0000abcd");
}

TEST(Seal, UrlOptions) {
  SealSettings s;
  EXPECT_FALSE(apply_url_option(s, "seal", "hmac"));
  EXPECT_EQ(s.mode, Mode::hmac);
  EXPECT_FALSE(apply_url_option(s, "seal_key_file", "/k"));
  EXPECT_EQ(s.key_file, "/k");
  EXPECT_FALSE(apply_url_option(s, "seal_anchor_file", "/a"));
  EXPECT_EQ(s.anchor_file, "/a");
  EXPECT_TRUE(is_url_option("seal_anchor_file"));
  EXPECT_FALSE(is_url_option("pool_size"));
  EXPECT_EQ(apply_url_option(s, "seal", "md5").value_or(""),
            "seal must be none, hash or hmac (got 'md5')");
  EXPECT_EQ(s.mode, Mode::hmac);

  const SealSettings in_url =
      settings_in_url("mysql://u:p@h/db?pool_size=2&seal=hash&seal_anchor_file=%2Ftmp%2Fa");
  EXPECT_EQ(in_url.mode, Mode::hash);
  EXPECT_EQ(in_url.anchor_file, "/tmp/a");
  EXPECT_EQ(settings_in_url("sqlite:///x.db").mode, Mode::none);
  EXPECT_EQ(settings_in_url("sqlite://rel.db?seal=hash").mode, Mode::hash);
  // A '?' in the password is not the query's.
  const SealSettings odd_password =
      settings_in_url("mysql://u:S3?cr3t@h/db?seal=hash&seal_anchor_file=/a");
  EXPECT_EQ(odd_password.mode, Mode::hash);
  EXPECT_EQ(odd_password.anchor_file, "/a");
  EXPECT_EQ(settings_in_url("postgresql://u:a?seal=hmac@h/db").mode, Mode::none);
  EXPECT_THROW(settings_in_url("sqlite:///x.db?seal=sha1"), auditpipe::url_error);
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
  // For sealing, 6 bytes are too few (verify still reads such a key).
  try {
    read_sealing_key(key);
    ADD_FAILURE() << "a 6-byte sealing key was accepted";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 6 bytes; a sealing key needs at least 16"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos);
  }
  ::chmod(key.c_str(), 0600);
  { std::ofstream(key, std::ios::trunc) << "sixteen bytes ok"; }
  EXPECT_EQ(read_sealing_key(key), "sixteen bytes ok");
  std::filesystem::remove_all(dir);
}

TEST(Seal, CheckFilesBeforeConnecting) {
  const auto dir = std::filesystem::temp_directory_path() / "auditpipe-seal-files-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string key = (dir / "key").string();
  { std::ofstream(key, std::ios::trunc) << "a secret of 24 bytes ..."; }
  ::chmod(key.c_str(), 0600);
  auto refusal = [](const SealSettings& s) {
    try {
      check_files(s);
    } catch (const auditpipe::error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal({Mode::hmac, key, (dir / "anchor").string()}), "accepted");
  EXPECT_EQ(refusal({Mode::hash, "", ""}), "accepted");
  EXPECT_NE(refusal({Mode::hmac, (dir / "missing").string(), ""}).find("missing"),
            std::string::npos);
  EXPECT_NE(refusal({Mode::hash, "", dir.string()}).find("is a directory"), std::string::npos);
  EXPECT_NE(refusal({Mode::hash, "", (dir / "no-such-dir" / "anchor").string()})
                .find("cannot write beside it"),
            std::string::npos);
  // Nothing is left behind by the check.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
