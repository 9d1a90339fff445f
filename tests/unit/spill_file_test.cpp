// Spill segments written and read back: order and bytes preserved across
// segment rotation; torn tails, flipped bytes and damaged headers skipped
// and counted, never looped on; the directory cap enforced.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "auditpipe/status.h"
#include "durable/spill_format.h"
#include "durable/spill_reader.h"
#include "durable/spill_writer.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using auditpipe::RecordRef;
using auditpipe::internal::SpillReader;
using auditpipe::internal::SpillWriter;
using testing_support::TempDir;

constexpr std::uint32_t record_size = 48;
constexpr std::uint64_t layout = 0x1234abcd;
constexpr std::size_t frame = 16 + 16 + record_size;

std::vector<std::byte> record_bytes(std::int64_t i) {
  std::vector<std::byte> r(record_size);
  for (std::size_t k = 0; k < r.size(); ++k)
    r[k] = static_cast<std::byte>((i * 31 + static_cast<std::int64_t>(k)) & 0xFF);
  return r;
}

void write_records(SpillWriter& w, std::int64_t from, std::int64_t to) {
  for (std::int64_t i = from; i < to; ++i) {
    const auto bytes = record_bytes(i);
    const RecordRef r{7, i, bytes.data()};
    ASSERT_EQ(w.append(std::span(&r, 1)), SpillWriter::Result::ok) << w.last_error();
  }
}

// Every record of every segment, in order.
std::vector<std::int64_t> read_all(const std::vector<fs::path>& segments,
                                   std::uint64_t* skipped = nullptr) {
  std::vector<std::int64_t> seqs;
  std::vector<RecordRef> out;
  for (const auto& s : segments) {
    SpillReader reader(s);
    EXPECT_TRUE(reader.header_valid());
    EXPECT_EQ(reader.fingerprint(), layout);
    while (reader.next(100, out) != 0) {
      for (const auto& r : out) {
        EXPECT_EQ(r.source_id, 7);
        EXPECT_EQ(std::memcmp(r.data, record_bytes(r.seq).data(), record_size), 0) << r.seq;
        seqs.push_back(r.seq);
      }
    }
    if (skipped) *skipped += reader.skipped_bytes();
  }
  return seqs;
}

TEST(SpillFile, RecordsComeBackInOrderAcrossSegments) {
  TempDir dir;
  std::vector<fs::path> segments;
  {
    SpillWriter w(dir.path(), layout, record_size, 1 << 30, 64 * frame);  // small segments
    write_records(w, 0, 1000);
    w.seal();
    segments = w.sealed_segments();
  }
  EXPECT_GT(segments.size(), 10u);
  const auto seqs = read_all(segments);
  ASSERT_EQ(seqs.size(), 1000u);
  for (std::int64_t i = 0; i < 1000; ++i) EXPECT_EQ(seqs[static_cast<std::size_t>(i)], i);
}

TEST(SpillFile, ATornTailIsSkippedAndCounted) {
  TempDir dir;
  fs::path segment;
  {
    SpillWriter w(dir.path(), layout, record_size, 1 << 30, 1 << 20);
    write_records(w, 0, 10);
    w.seal();
    segment = w.sealed_segments().at(0);
  }
  fs::resize_file(segment, fs::file_size(segment) - 5);  // a crash in the middle of the last frame
  std::uint64_t skipped = 0;
  const auto seqs = read_all({segment}, &skipped);
  EXPECT_EQ(seqs.size(), 9u);
  EXPECT_EQ(skipped, frame - 5);
}

TEST(SpillFile, FlippedBytesLoseOnlyTheirFrame) {
  TempDir dir;
  fs::path segment;
  {
    SpillWriter w(dir.path(), layout, record_size, 1 << 30, 1 << 20);
    write_records(w, 0, 20);
    w.seal();
    segment = w.sealed_segments().at(0);
  }
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(32 + 5 * frame + 40));  // inside frame 5's record
    f.put('\x5A');
    f.seekp(static_cast<std::streamoff>(32 + 12 * frame + 1));  // frame 12's magic
    f.put('\x00');
  }
  SpillReader reader(segment);
  std::vector<RecordRef> out;
  std::vector<std::int64_t> seqs;
  while (reader.next(7, out) != 0) {
    for (const auto& r : out) seqs.push_back(r.seq);
  }
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < 20; ++i) {
    if (i != 5 && i != 12) expected.push_back(i);
  }
  EXPECT_EQ(seqs, expected);
  EXPECT_EQ(reader.skipped_bytes(), 2 * frame);
  EXPECT_EQ(reader.damaged_regions(), 2u);
}

TEST(SpillFile, ADamagedHeaderYieldsNothing) {
  TempDir dir;
  const fs::path path = dir.path() / "spill-0000000000000001.seg";
  std::ofstream(path) << "this is not a spill segment at all";
  SpillReader reader(path);
  EXPECT_FALSE(reader.header_valid());
  std::vector<RecordRef> out;
  EXPECT_EQ(reader.next(10, out), 0u);
}

TEST(SpillFile, RandomGarbageAfterAGoodHeaderEndsWithoutLooping) {
  TempDir dir;
  fs::path segment;
  {
    SpillWriter w(dir.path(), layout, record_size, 1 << 30, 1 << 20);
    write_records(w, 0, 3);
    w.seal();
    segment = w.sealed_segments().at(0);
  }
  {
    std::ofstream f(segment, std::ios::app | std::ios::binary);
    std::mt19937 rng(42);
    for (int i = 0; i < 300000; ++i) f.put(static_cast<char>(rng()));
  }
  std::uint64_t skipped = 0;
  const auto seqs = read_all({segment}, &skipped);
  EXPECT_EQ(seqs.size(), 3u);
  EXPECT_EQ(skipped, 300000u);
}

TEST(SpillFile, TheDirectoryCapIsEnforced) {
  TempDir dir;
  SpillWriter w(dir.path(), layout, record_size, 32 + 10 * frame, 1 << 20);
  write_records(w, 0, 10);
  const auto bytes = record_bytes(10);
  const RecordRef r{7, 10, bytes.data()};
  EXPECT_EQ(w.append(std::span(&r, 1)), SpillWriter::Result::full);
  EXPECT_NE(w.last_error().find("cap"), std::string::npos);
}

TEST(SpillFile, AnUnusableDirectoryIsAnErrorAtStart) {
  TempDir dir;
  const fs::path file = dir.path() / "a-file";
  std::ofstream(file) << "x";
  EXPECT_THROW(SpillWriter(file, layout, record_size, 1 << 20, 1 << 20), auditpipe::error);
}

}  // namespace
