// Spill as one object: records() counts what the directory holds across
// overflow appends, close-time keeps, replay and a restart; a replayed
// record comes back as the bytes that were spilled; a version-1 directory
// left by an older auditpipe is replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "durable/spill.h"
#include "durable/spill_format.h"
#include "spill_test_rows.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using auditpipe::descriptor_of;
using auditpipe::Options;
using auditpipe::RecordRef;
using auditpipe::internal::Counters;
using auditpipe::internal::RecordFinisher;
using auditpipe::internal::Spill;
using spill_test::WideRow;
using testing_support::TempDir;

struct Fixture {
  explicit Fixture(const fs::path& dir, std::uint64_t segment_bytes = 64 << 20,
                   std::uint64_t max_bytes = Options{}.spill_max_bytes)
      : options([&] {
          Options o;
          o.spill_path = dir;
          o.spill_segment_bytes = segment_bytes;
          o.spill_max_bytes = max_bytes;
          return o;
        }()),
        finisher(descriptor_of<WideRow>(), true, counters),
        spill(options, descriptor_of<WideRow>(), counters, finisher) {}

  Options options;
  Counters counters;
  RecordFinisher finisher;
  Spill spill;
};

// Replays everything; the seqs in order, each record checked.
std::vector<std::int64_t> replay_all(Spill& spill, std::vector<std::uint64_t>* left = nullptr) {
  std::vector<std::int64_t> seqs;
  while (spill.replay_some(64, [&](std::span<const RecordRef> refs) {
    for (const RecordRef& r : refs) {
      const WideRow expected = spill_test::typical_wide_row(r.seq);
      EXPECT_EQ(std::memcmp(r.data, &expected, sizeof expected), 0) << r.seq;
      seqs.push_back(r.seq);
    }
    return true;
  })) {
    if (left != nullptr) left->push_back(spill.records());
  }
  return seqs;
}

TEST(Spill, RecordsCountsAppendsKeepsAndReplay) {
  TempDir dir;
  Fixture f(dir.path() / "spill", 4096);
  EXPECT_EQ(f.spill.records(), 0u);
  for (std::int64_t i = 0; i < 100; ++i) {
    WideRow r = spill_test::typical_wide_row(i);
    ASSERT_TRUE(f.spill.append_overflow(1, i, reinterpret_cast<std::byte*>(&r)));
  }
  EXPECT_EQ(f.spill.records(), 100u);
  std::vector<WideRow> rows;
  for (std::int64_t i = 100; i < 150; ++i) rows.push_back(spill_test::typical_wide_row(i));
  std::vector<RecordRef> refs;
  for (std::size_t k = 0; k < rows.size(); ++k)
    refs.push_back({1, 100 + static_cast<std::int64_t>(k), reinterpret_cast<std::byte*>(&rows[k])});
  EXPECT_EQ(f.spill.keep(refs, 16), 50u);
  EXPECT_EQ(f.spill.records(), 150u);
  EXPECT_TRUE(f.spill.pending());

  std::vector<std::uint64_t> left;
  const auto seqs = replay_all(f.spill, &left);
  ASSERT_EQ(seqs.size(), 150u);
  for (std::int64_t i = 0; i < 150; ++i) EXPECT_EQ(seqs[static_cast<std::size_t>(i)], i);
  for (std::size_t k = 1; k < left.size(); ++k) EXPECT_LE(left[k], left[k - 1]);
  EXPECT_EQ(f.spill.records(), 0u);
  EXPECT_FALSE(f.spill.pending());
}

// close() keeps what it can: a chunk past the directory's cap (or a
// full disk) is tried in halves, so the records that fit are kept, not
// given up with the chunk.
TEST(Spill, AKeepThatDoesNotFitKeepsAsManyRecordsAsFit) {
  std::vector<WideRow> rows;
  for (std::int64_t i = 0; i < 100; ++i) rows.push_back(spill_test::typical_wide_row(i));
  std::vector<RecordRef> refs;
  for (std::size_t k = 0; k < rows.size(); ++k)
    refs.push_back({1, static_cast<std::int64_t>(k), reinterpret_cast<std::byte*>(&rows[k])});
  std::uint64_t all_bytes = 0;
  {
    TempDir dir;
    Fixture whole(dir.path() / "spill");
    ASSERT_EQ(whole.spill.keep(refs, 100), 100u);
    all_bytes = whole.spill.bytes();
  }
  TempDir dir;
  Fixture f(dir.path() / "spill", 64 << 20, all_bytes * 6 / 10);
  const std::size_t kept = f.spill.keep(refs, 100);
  EXPECT_GE(kept, 55u);
  EXPECT_LT(kept, 61u);
  EXPECT_EQ(f.spill.records(), kept);
  EXPECT_EQ(f.counters.spilled.load(), kept);
  const auto seqs = replay_all(f.spill);
  ASSERT_EQ(seqs.size(), kept);
  for (std::size_t i = 0; i < kept; ++i) EXPECT_EQ(seqs[i], static_cast<std::int64_t>(i));
}

TEST(Spill, RecordsFoundAtStartAreCountedAndReplayed) {
  TempDir dir;
  {
    Fixture f(dir.path() / "spill", 4096);
    for (std::int64_t i = 0; i < 80; ++i) {
      WideRow r = spill_test::typical_wide_row(i);
      ASSERT_TRUE(f.spill.append_overflow(1, i, reinterpret_cast<std::byte*>(&r)));
    }
    // Half replayed, then the process ends (the active segment is sealed
    // by the destructor).
    std::size_t replayed = 0;
    while (replayed < 40 && f.spill.replay_some(8, [&](std::span<const RecordRef> refs) {
      replayed += refs.size();
      return true;
    })) {
    }
    EXPECT_EQ(f.spill.records(), 80u - replayed);
  }
  Fixture again(dir.path() / "spill", 4096);
  const std::uint64_t found = again.spill.records();
  const auto seqs = replay_all(again.spill);
  // Found at start: what the segments still on disk hold, replayed or not
  // (a segment partly replayed is replayed whole again; the sink's key
  // makes the repeats harmless).
  EXPECT_EQ(found, seqs.size());
  EXPECT_GE(seqs.size(), 40u);
  EXPECT_EQ(seqs.back(), 79);
  EXPECT_EQ(again.spill.records(), 0u);
}

TEST(Spill, DamageLeavesTheCountWhenItsSegmentIsDone) {
  TempDir dir;
  fs::path segment;
  {
    Fixture f(dir.path() / "spill");
    for (std::int64_t i = 0; i < 10; ++i) {
      WideRow r = spill_test::typical_wide_row(i);
      ASSERT_TRUE(f.spill.append_overflow(1, i, reinterpret_cast<std::byte*>(&r)));
    }
  }
  for (const auto& e : fs::directory_iterator(dir.path() / "spill"))
    if (e.path().extension() == ".seg") segment = e.path();
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(32 + 100);  // inside the first frame
    file.put('\x7F');
  }
  Fixture f(dir.path() / "spill");
  EXPECT_EQ(f.spill.records(), 10u);  // the seal says 10
  const auto seqs = replay_all(f.spill);
  EXPECT_EQ(seqs.size(), 9u);
  EXPECT_EQ(f.spill.records(), 0u);
  EXPECT_EQ(f.counters.spill_damaged_regions.load(), 1u);
}

// A segment a crash left shorter than its header (made, nothing written
// yet) holds no record: removed without a word of damage.
TEST(Spill, ASegmentShorterThanItsHeaderIsRemovedNotSetAside) {
  TempDir dir;
  {
    Fixture f(dir.path() / "spill");
    for (std::int64_t i = 0; i < 10; ++i) {
      WideRow r = spill_test::typical_wide_row(i);
      ASSERT_TRUE(f.spill.append_overflow(1, i, reinterpret_cast<std::byte*>(&r)));
    }
  }
  std::uint64_t newest = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "spill")) {
    const std::string name = e.path().filename().string();  // spill-<16 digits>.seg
    if (name.size() == 26)
      newest = std::max<std::uint64_t>(newest, std::stoull(name.substr(6, 16)));
  }
  for (const std::uint64_t extra : {newest + 1, newest + 2}) {
    std::ofstream(dir.path() / "spill" / auditpipe::internal::segment_name(extra), std::ios::binary)
        << std::string(extra == newest + 1 ? 0 : 20, 'x');
  }
  Fixture f(dir.path() / "spill");
  const auto seqs = replay_all(f.spill);
  EXPECT_EQ(seqs.size(), 10u);
  EXPECT_EQ(f.counters.spill_bad_segments.load(), 0u);
  for (const auto& e : fs::directory_iterator(dir.path() / "spill")) {
    if (e.path().filename() == ".auditpipe-lock") continue;  // the directory's owner's
    EXPECT_EQ(e.path().extension(), ".seg") << e.path() << " was set aside";
  }
  EXPECT_FALSE(fs::exists(dir.path() / "spill" / auditpipe::internal::segment_name(newest + 1)));
  EXPECT_FALSE(fs::exists(dir.path() / "spill" / auditpipe::internal::segment_name(newest + 2)));
}

}  // namespace
