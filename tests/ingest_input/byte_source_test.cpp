// ByteSource: plain, gzip (concatenated members) and zstd (several frames)
// files made with the real commands; detection by magic bytes, not name;
// skip_to; growing files; errors naming the path.
#include "input/byte_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auditpipe/status.h"
#include "ingest_test_util.h"

namespace {

using auditpipe::ingest::open_byte_source;
using ingest_test::drain;
using ingest_test::run;
using testing_support::TempDir;

TEST(ByteSource, PlainFileReadsAsItIs) {
  TempDir dir;
  const std::string data = ingest_test::lines(1000);
  ingest_test::write_file(dir.file("a.jsonl"), data);
  auto s = open_byte_source(dir.file("a.jsonl"));
  EXPECT_FALSE(s->compressed());
  EXPECT_EQ(s->compression(), "none");
  EXPECT_EQ(s->input_size(), data.size());
  EXPECT_EQ(drain(*s, 7), data);
  EXPECT_EQ(s->position(), data.size());
  EXPECT_EQ(s->input_bytes_read(), data.size());
}

TEST(ByteSource, GzipDetectedByMagicNotName) {
  TempDir dir;
  const std::string data = ingest_test::lines(5000);
  ingest_test::write_file(dir.file("a"), data);
  run("gzip -c " + dir.file("a") + " > " + dir.file("plain.txt"));  // a .txt name
  auto s = open_byte_source(dir.file("plain.txt"));
  EXPECT_TRUE(s->compressed());
  EXPECT_EQ(s->compression(), "gzip");
  EXPECT_EQ(drain(*s, 1000), data);
  EXPECT_EQ(s->position(), data.size());
  EXPECT_EQ(s->input_bytes_read(), *s->input_size());
  EXPECT_LT(*s->input_size(), data.size());
}

// dir/x.gz: a gzip member of each of `parts`, made by the gzip command.
void gzip_members(const TempDir& dir, const std::vector<std::string>& parts) {
  run(": > " + dir.file("x.gz"));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part = dir.file("part" + std::to_string(i));
    ingest_test::write_file(part, parts[i]);
    run("gzip -c " + part + " >> " + dir.file("x.gz"));
  }
}

TEST(ByteSource, GzipConcatenatedMembersAreOneStream) {
  TempDir dir;
  const std::string a = ingest_test::lines(300, "a"), b = ingest_test::lines(200, "b");
  gzip_members(dir, {a, b, a});
  auto s = open_byte_source(dir.file("x.gz"));
  EXPECT_EQ(drain(*s, 333), a + b + a);
}

// Zero bytes after the last member (a tape block's padding): gzip -t and
// zcat take the file, and so does the source. Before, it failed "incorrect
// header check" on every run. Anything else after the zeros is not gzip.
TEST(ByteSource, GzipPaddedWithZeroBytesReadsWhole) {
  TempDir dir;
  const std::string a = ingest_test::lines(300, "a"), b = ingest_test::lines(200, "b");
  gzip_members(dir, {a, b});
  const std::string gz = ingest_test::read_file(dir.file("x.gz"));
  ingest_test::write_file(dir.file("padded.gz"), gz + std::string(70000, '\0'));
  run("gzip -t " + dir.file("padded.gz"));
  auto s = open_byte_source(dir.file("padded.gz"));
  EXPECT_EQ(drain(*s, 333), a + b);
  ingest_test::write_file(dir.file("garbage.gz"), gz + std::string(10, '\0') + "x");
  auto t = open_byte_source(dir.file("garbage.gz"));
  try {
    drain(*t);
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("data after the zero bytes that pad the end"),
              std::string::npos)
        << e.what();
  }
}

TEST(ByteSource, ZstdWithSeveralFrames) {
  TempDir dir;
  const std::string a = ingest_test::lines(3000, "a"), b = ingest_test::lines(100, "b");
  ingest_test::write_file(dir.file("a"), a);
  ingest_test::write_file(dir.file("b"), b);
  run("zstd -q -c " + dir.file("a") + " > " + dir.file("x.log"));
  run("zstd -q -c " + dir.file("b") + " >> " + dir.file("x.log"));
  auto s = open_byte_source(dir.file("x.log"));
  EXPECT_TRUE(s->compressed());
  EXPECT_EQ(s->compression(), "zstd");
  EXPECT_EQ(drain(*s, 100), a + b);
  EXPECT_EQ(s->position(), a.size() + b.size());
}

TEST(ByteSource, SkipToOnPlainAndCompressed) {
  TempDir dir;
  const std::string data = ingest_test::lines(2000);
  ingest_test::write_file(dir.file("a"), data);
  run("gzip -c " + dir.file("a") + " > " + dir.file("a.gz"));
  run("zstd -q -c " + dir.file("a") + " > " + dir.file("a.zst"));
  for (const char* name : {"a", "a.gz", "a.zst"}) {
    auto s = open_byte_source(dir.file(name));
    ASSERT_TRUE(s->skip_to(12345)) << name;
    EXPECT_EQ(s->position(), 12345u);
    EXPECT_EQ(drain(*s), data.substr(12345)) << name;
    auto t = open_byte_source(dir.file(name));
    EXPECT_FALSE(t->skip_to(data.size() + 10)) << name;
    EXPECT_EQ(t->position(), data.size()) << name;
  }
}

TEST(ByteSource, PlainFileThatGrowsGivesMoreLater) {
  TempDir dir;
  const std::string path = dir.file("grow.jsonl");
  ingest_test::write_file(path, "{\"a\":1}\n");
  auto s = open_byte_source(path);
  EXPECT_EQ(drain(*s), "{\"a\":1}\n");
  char buf[16];
  EXPECT_EQ(s->read(buf, sizeof buf), 0u);
  ingest_test::append_file(path, "{\"a\":2}\n");
  EXPECT_EQ(drain(*s), "{\"a\":2}\n");
  EXPECT_EQ(s->position(), 16u);
}

TEST(ByteSource, ShortAndEmptyFiles) {
  TempDir dir;
  ingest_test::write_file(dir.file("e"), "");
  ingest_test::write_file(dir.file("one"), "\x1f");
  EXPECT_EQ(drain(*open_byte_source(dir.file("e"))), "");
  auto s = open_byte_source(dir.file("one"));
  EXPECT_FALSE(s->compressed());
  EXPECT_EQ(drain(*s), "\x1f");
}

TEST(ByteSource, StdinIsDash) {
  TempDir dir;
  const std::string data = ingest_test::lines(100);
  ingest_test::write_file(dir.file("a"), data);
  run("gzip -c " + dir.file("a") + " > " + dir.file("a.gz"));
  // stdin becomes the gzip file for the length of the test.
  FILE* saved = fdopen(dup(0), "r");
  ASSERT_NE(freopen(dir.file("a.gz").c_str(), "r", stdin), nullptr);
  auto s = open_byte_source("-");
  EXPECT_EQ(s->path(), "-");
  EXPECT_TRUE(s->compressed());
  EXPECT_TRUE(s->input_size().has_value());  // a regular file behind stdin
  EXPECT_EQ(drain(*s), data);
  dup2(fileno(saved), 0);
  fclose(saved);
}

TEST(ByteSource, ErrorsNameThePath) {
  TempDir dir;
  try {
    open_byte_source(dir.file("missing.jsonl"));
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(ByteSource, CorruptAndTruncatedGzip) {
  TempDir dir;
  const std::string data = ingest_test::lines(3000);
  ingest_test::write_file(dir.file("a"), data);
  run("gzip -c " + dir.file("a") + " > " + dir.file("a.gz"));
  std::string gz = ingest_test::read_file(dir.file("a.gz"));
  std::string bad = gz;
  for (std::size_t i = 100; i < 140; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  ingest_test::write_file(dir.file("bad.gz"), bad);
  auto s = open_byte_source(dir.file("bad.gz"));
  try {
    drain(*s);
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("corrupt gzip data at byte"), std::string::npos)
        << e.what();
  }
  ingest_test::write_file(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  auto t = open_byte_source(dir.file("cut.gz"));
  EXPECT_THROW(drain(*t), auditpipe::error);
}

TEST(ByteSource, CorruptZstd) {
  TempDir dir;
  const std::string data = ingest_test::lines(3000);
  ingest_test::write_file(dir.file("a"), data);
  run("zstd -q -c " + dir.file("a") + " > " + dir.file("a.zst"));
  std::string z = ingest_test::read_file(dir.file("a.zst"));
  for (std::size_t i = 20; i < 60; ++i) z[i] = static_cast<char>(z[i] ^ 0x33);
  ingest_test::write_file(dir.file("bad.zst"), z);
  auto s = open_byte_source(dir.file("bad.zst"));
  try {
    drain(*s);
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.zst"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("zstd"), std::string::npos) << e.what();
  }
}

TEST(ByteSource, MemorySource) {
  const std::string data = "hello\nworld\n";
  auto s = auditpipe::ingest::memory_byte_source(data);
  EXPECT_EQ(drain(*s, 3), data);
}

}  // namespace
