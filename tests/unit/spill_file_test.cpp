// Spill segments written and read back: order and bytes preserved across
// segment rotation; records stored compact (only the bytes in use) and
// rebuilt over the table's prototype, for every column type; torn tails,
// flipped bytes and damaged headers skipped and counted, never looped on;
// segments of the old whole-slot format still read; the directory cap
// enforced; records counted at start from the seal, or from the frames of
// a segment a crash left open.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "auditpipe/status.h"
#include "common/crc32c.h"
#include "common/descriptor_fingerprint.h"
#include "durable/spill_format.h"
#include "durable/spill_reader.h"
#include "durable/spill_writer.h"
#include "null_row.h"
#include "spill_test_rows.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using auditpipe::descriptor_of;
using auditpipe::RecordRef;
using auditpipe::internal::RecordCodec;
using auditpipe::internal::SegmentHeader;
using auditpipe::internal::SpillReader;
using auditpipe::internal::SpillWriter;
using spill_test::fresh;
using spill_test::SmallRow;
using spill_test::WideRow;
using testing_support::TempDir;

constexpr std::uint64_t layout = 0x1234abcd;
// A SmallRow with a 12-byte note: 8 + 4 + 1 + 12 bytes of record, so every
// frame in these tests has this size.
constexpr std::size_t frame = 16 + 16 + 8 + 4 + 1 + 12;

const auditpipe::TableDescriptor& small() {
  return descriptor_of<SmallRow>();
}
const auditpipe::TableDescriptor& wide() {
  return descriptor_of<WideRow>();
}

SmallRow small_row(std::int64_t i) {
  SmallRow r = fresh<SmallRow>();
  r.id = i * 3;
  r.code = static_cast<std::int32_t>(i);
  char note[16];
  std::snprintf(note, sizeof note, "note-%07lld", static_cast<long long>(i));
  r.note = note;
  return r;
}

void write_records(SpillWriter& w, std::int64_t from, std::int64_t to) {
  for (std::int64_t i = from; i < to; ++i) {
    const SmallRow row = small_row(i);
    const RecordRef r{7, i, reinterpret_cast<const std::byte*>(&row)};
    ASSERT_EQ(w.append(std::span(&r, 1)), SpillWriter::Result::ok) << w.last_error();
  }
}

// Every record of every segment, in order.
std::vector<std::int64_t> read_all(const std::vector<fs::path>& segments,
                                   std::uint64_t* skipped = nullptr) {
  const RecordCodec codec(small());
  std::vector<std::int64_t> seqs;
  std::vector<RecordRef> out;
  for (const auto& s : segments) {
    SpillReader reader(s, codec);
    EXPECT_TRUE(reader.header_valid());
    EXPECT_EQ(reader.fingerprint(), layout);
    while (reader.next(100, out) != 0) {
      for (const auto& r : out) {
        EXPECT_EQ(r.source_id, 7);
        const SmallRow expected = small_row(r.seq);
        EXPECT_EQ(std::memcmp(r.data, &expected, sizeof expected), 0) << r.seq;
        seqs.push_back(r.seq);
      }
    }
    if (skipped) *skipped += reader.skipped_bytes();
  }
  return seqs;
}

fs::path one_sealed_segment(const TempDir& dir, std::int64_t records) {
  SpillWriter w(dir.path(), small(), layout, 1 << 30, 1 << 20);
  write_records(w, 0, records);
  w.seal();
  return w.sealed_segments().at(0);
}

TEST(SpillFile, RecordsComeBackInOrderAcrossSegments) {
  TempDir dir;
  std::vector<fs::path> segments;
  {
    SpillWriter w(dir.path(), small(), layout, 1 << 30, 64 * frame);  // small segments
    write_records(w, 0, 1000);
    w.seal();
    segments = w.sealed_segments();
  }
  EXPECT_GT(segments.size(), 10u);
  const auto seqs = read_all(segments);
  ASSERT_EQ(seqs.size(), 1000u);
  for (std::int64_t i = 0; i < 1000; ++i) EXPECT_EQ(seqs[static_cast<std::size_t>(i)], i);
}

TEST(SpillFile, FramesHoldOnlyTheBytesInUse) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 10);
  EXPECT_EQ(fs::file_size(segment), 32 + 10 * frame);
}

// The target: a 16-column row of every column type holding ~150
// bytes of text takes at most twice its used bytes on disk, frame header
// and key included. Used bytes: the fixed-size columns' bytes plus the
// text in use.
TEST(SpillFile, AWideRowTakesAtMostTwiceItsUsedBytes) {
  static_assert(sizeof(WideRow) == 2384);
  const WideRow row = spill_test::typical_wide_row(1);
  std::size_t used = 0, text = 0;
  for (const auto& c : wide().columns) {
    if (c.type == auditpipe::ColumnType::text) {
      text += auditpipe::read_text(reinterpret_cast<const std::byte*>(&row), c).size();
    } else {
      used += c.size;
    }
  }
  used += text;
  EXPECT_GE(text, 140u);
  EXPECT_LE(text, 160u);

  TempDir dir;
  constexpr std::size_t n = 1000;
  fs::path segment;
  {
    SpillWriter w(dir.path(), wide(), layout, 1 << 30, 64 << 20);
    for (std::size_t i = 0; i < n; ++i) {
      const WideRow r = spill_test::typical_wide_row(static_cast<std::int64_t>(i % 10));
      const RecordRef ref{1, static_cast<std::int64_t>(i), reinterpret_cast<const std::byte*>(&r)};
      ASSERT_EQ(w.append(std::span(&ref, 1)), SpillWriter::Result::ok);
    }
    w.seal();
    segment = w.sealed_segments().at(0);
  }
  const double per_record = static_cast<double>(fs::file_size(segment) - 32) / n;
  const double whole_slot = 16 + 16 + sizeof(WideRow);  // version 1's frame
  std::printf("wide row: %zu used bytes; on disk %.1f bytes a record (%.2fx used), was %.0f\n",
              used, per_record, per_record / static_cast<double>(used), whole_slot);
  EXPECT_LE(per_record, 2.0 * static_cast<double>(used));
}

// One record through a segment and back; its bytes must be the original's.
WideRow round_trip(const WideRow& row) {
  TempDir dir;
  SpillWriter w(dir.path(), wide(), layout, 1 << 30, 1 << 20);
  const RecordRef ref{3, 9, reinterpret_cast<const std::byte*>(&row)};
  EXPECT_EQ(w.append(std::span(&ref, 1)), SpillWriter::Result::ok);
  w.seal();
  const RecordCodec codec(wide());
  SpillReader reader(w.sealed_segments().at(0), codec);
  std::vector<RecordRef> out;
  EXPECT_EQ(reader.next(10, out), 1u);
  WideRow back = fresh<WideRow>();
  if (out.size() == 1) {
    EXPECT_EQ(out[0].source_id, 3);
    EXPECT_EQ(out[0].seq, 9);
    std::memcpy(static_cast<void*>(&back), out[0].data, sizeof back);
  }
  EXPECT_EQ(reader.next(10, out), 0u);
  EXPECT_EQ(reader.skipped_bytes(), 0u);
  return back;
}

void expect_same_bytes(const WideRow& a, const WideRow& b) {
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(SpillFile, EveryColumnTypeRoundTripsAtItsExtremes) {
  for (int sign : {-1, 1}) {
    WideRow r = fresh<WideRow>();
    r.at = auditpipe::timestamp{sign < 0 ? std::numeric_limits<std::int64_t>::min()
                                         : std::numeric_limits<std::int64_t>::max()};
    r.request_id = sign < 0 ? std::numeric_limits<std::int64_t>::min() : -1;
    r.latency_ms = sign < 0 ? -0.0 : std::numeric_limits<double>::quiet_NaN();
    r.status = sign < 0 ? std::numeric_limits<std::int32_t>::min() : 0x7FFFFFFF;
    r.bytes_out = sign < 0 ? 0 : 0xFFFFFFFFu;
    r.region = sign < 0 ? std::numeric_limits<std::int16_t>::min() : 0x7FFF;
    r.port = sign < 0 ? 0 : 0xFFFF;
    r.level = sign < 0 ? std::numeric_limits<std::int8_t>::min() : 0x7F;
    r.attempt = sign < 0 ? 0 : 0xFF;
    r.ok = sign > 0;
    r.host = "h";
    const WideRow back = round_trip(r);
    expect_same_bytes(back, r);
    EXPECT_EQ(std::signbit(back.latency_ms), sign < 0);
  }
  expect_same_bytes(round_trip(spill_test::typical_wide_row(5)), spill_test::typical_wide_row(5));
}

TEST(SpillFile, EmptyAndFullCapacityTextRoundTrip) {
  WideRow r = fresh<WideRow>();  // every text field empty
  expect_same_bytes(round_trip(r), r);
  r.host = std::string(64, 'h');
  r.user = std::string(64, 'u');
  r.action = std::string(128, 'a');
  r.resource = std::string(512, 'r');
  r.detail = std::string(1024, 'd');
  r.trace = std::string(504, 't');
  ASSERT_FALSE(r.detail.truncated());
  const WideRow back = round_trip(r);
  expect_same_bytes(back, r);
  EXPECT_EQ(back.detail.size(), 1024u);
}

TEST(SpillFile, TextWithNulsAndMultiByteUtf8RoundTrips) {
  WideRow r = fresh<WideRow>();
  r.host = std::string_view("a\0b\0\0c", 6);
  r.user = "Zoë Ødegård 数据 🚀";
  r.action = std::string_view("\0", 1);
  r.detail = std::string(300, '\0');
  const WideRow back = round_trip(r);
  expect_same_bytes(back, r);
  EXPECT_EQ(back.host.view(), std::string_view("a\0b\0\0c", 6));
  EXPECT_EQ(back.user.view(), "Zoë Ødegård 数据 🚀");
}

TEST(SpillFile, TextFlagsRoundTrip) {
  WideRow r = fresh<WideRow>();
  r.host = std::string(100, 'x');  // cut to 64: marked truncated
  ASSERT_TRUE(r.host.truncated());
  r.user.assign(static_cast<const char*>(nullptr));  // marked from_null
  const WideRow back = round_trip(r);
  expect_same_bytes(back, r);
  EXPECT_TRUE(back.host.truncated());
}

// NULLs of every column type, zeros, empty strings and values all come
// back as they were: the presence byte is in the frame, and a NULL stores
// nothing else.
TEST(SpillFile, NullableColumnsRoundTripWithTheirNulls) {
  using testing_support::NullRow;
  const auto& table = auditpipe::descriptor_of<NullRow>();
  const std::uint64_t nulls_layout = auditpipe::internal::fingerprint(table);
  TempDir dir;
  SpillWriter w(dir.path(), table, nulls_layout, 1 << 30, 1 << 20);
  std::vector<NullRow> rows;
  for (std::int64_t i = 0; i < 9; ++i) rows.push_back(testing_support::null_row(i));
  rows[0].detail = "stale text under a NULL";
  rows[0].detail = std::nullopt;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RecordRef ref{1, static_cast<std::int64_t>(i),
                        reinterpret_cast<const std::byte*>(&rows[i])};
    ASSERT_EQ(w.append(std::span(&ref, 1)), SpillWriter::Result::ok);
  }
  w.seal();
  const RecordCodec codec(table);
  SpillReader reader(w.sealed_segments().at(0), codec);
  std::vector<RecordRef> out;
  ASSERT_EQ(reader.next(100, out), rows.size());
  for (const RecordRef& r : out) {
    const auto& original = rows.at(static_cast<std::size_t>(r.seq));
    EXPECT_EQ(
        testing_support::null_row_difference(reinterpret_cast<const std::byte*>(&original), r.data),
        "")
        << "record " << r.seq;
  }
  // An all-NULL record is its presence bytes and the one plain column.
  const NullRow empty{};
  std::vector<std::byte> encoded(codec.max_encoded_size());
  EXPECT_EQ(codec.encode(reinterpret_cast<const std::byte*>(&empty), encoded.data()), 8u + 12u);
}

TEST(SpillFile, BytesNoColumnOwnsComeFromThePrototype) {
  WideRow r = fresh<WideRow>();
  r.detail = "a long text that is then replaced by a short one";
  r.detail = "short";  // the old tail stays in the slot past the length
  const WideRow back = round_trip(r);
  EXPECT_EQ(back.detail.view(), "short");
  EXPECT_EQ(std::memcmp(&back.detail, &r.detail, 8 + 5), 0);
  WideRow expected = fresh<WideRow>();
  expected.detail = "short";
  expect_same_bytes(back, expected);
}

TEST(SpillFile, TheCodecRefusesWhatIsNoRecord) {
  const RecordCodec codec(small());
  const SmallRow row = small_row(4);
  std::vector<std::byte> bytes(codec.max_encoded_size());
  const std::size_t n = codec.encode(reinterpret_cast<const std::byte*>(&row), bytes.data());
  ASSERT_EQ(n, 8u + 4u + 1u + 12u);
  std::vector<std::byte> record(sizeof(SmallRow));
  EXPECT_TRUE(codec.decode({bytes.data(), n}, record.data()));
  EXPECT_EQ(std::memcmp(record.data(), &row, sizeof row), 0);
  EXPECT_FALSE(codec.decode({bytes.data(), n - 1}, record.data()));  // short
  bytes[n] = std::byte{0};
  EXPECT_FALSE(codec.decode({bytes.data(), n + 1}, record.data()));  // trailing
  bytes[12] = std::byte{21 << 1};  // a length past the capacity of 20
  EXPECT_FALSE(codec.decode({bytes.data(), n}, nullptr));
  bytes[12] = std::byte{0xFF};  // a varint that never ends
  for (std::size_t i = 13; i < n; ++i) bytes[i] = std::byte{0xFF};
  EXPECT_FALSE(codec.decode({bytes.data(), n}, nullptr));
}

TEST(SpillFile, ATornTailIsSkippedAndCounted) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 10);
  fs::resize_file(segment, fs::file_size(segment) - 5);  // a crash in the middle of the last frame
  std::uint64_t skipped = 0;
  const auto seqs = read_all({segment}, &skipped);
  EXPECT_EQ(seqs.size(), 9u);
  EXPECT_EQ(skipped, frame - 5);
}

TEST(SpillFile, FlippedBytesLoseOnlyTheirFrame) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 20);
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(32 + 5 * frame + 40));  // inside frame 5's record
    f.put('\x5A');
    f.seekp(static_cast<std::streamoff>(32 + 12 * frame + 1));  // frame 12's magic
    f.put('\x00');
  }
  const RecordCodec codec(small());
  SpillReader reader(segment, codec);
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

TEST(SpillFile, ADamagedLengthIsSkippedAndTheFramesAfterItRead) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 20);
  {
    // Frame 3 claims a longer payload than it has: its checksum fails
    // over those bytes, and the reader finds frame 4 after it.
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(32 + 3 * frame + 4));
    f.put('\x30');
  }
  std::uint64_t skipped = 0;
  const auto seqs = read_all({segment}, &skipped);
  EXPECT_EQ(seqs.size(), 19u);
  EXPECT_EQ(skipped, frame);
}

TEST(SpillFile, AGoodChecksumOverBytesThatAreNoRecordIsSkipped) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 3);
  {
    // Frame 1's note length made past the capacity, its checksum made to
    // match: a frame, but no record of the table.
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(32 + frame);
    std::vector<char> bytes(frame);
    f.seekg(at);
    f.read(bytes.data(), static_cast<std::streamsize>(frame));
    bytes[16 + 16 + 12] = static_cast<char>(30 << 1);
    const std::uint32_t crc = auditpipe::internal::crc32c(
        reinterpret_cast<const std::byte*>(bytes.data()) + 16, frame - 16);
    std::memcpy(bytes.data() + 8, &crc, 4);
    f.seekp(at);
    f.write(bytes.data(), static_cast<std::streamsize>(frame));
  }
  std::uint64_t skipped = 0;
  const auto seqs = read_all({segment}, &skipped);
  EXPECT_EQ(seqs, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(skipped, frame);
}

TEST(SpillFile, ADamagedHeaderYieldsNothing) {
  TempDir dir;
  const fs::path path = dir.path() / "spill-0000000000000001.seg";
  std::ofstream(path) << "this is not a spill segment at all";
  const RecordCodec codec(small());
  SpillReader reader(path, codec);
  EXPECT_FALSE(reader.header_valid());
  std::vector<RecordRef> out;
  EXPECT_EQ(reader.next(10, out), 0u);
}

TEST(SpillFile, RandomGarbageAfterAGoodHeaderEndsWithoutLooping) {
  TempDir dir;
  const fs::path segment = one_sealed_segment(dir, 3);
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

// A segment as version 1 wrote it: whole slots.
void write_version_1(const fs::path& path, std::int64_t from, std::int64_t to,
                     std::uint64_t fingerprint = layout) {
  std::ofstream f(path, std::ios::binary);
  SegmentHeader h{};
  std::memcpy(h.magic, auditpipe::internal::spill_magic, 8);
  h.version = 1;
  h.record_size = sizeof(SmallRow);
  h.fingerprint = fingerprint;
  f.write(reinterpret_cast<const char*>(&h), sizeof h);
  for (std::int64_t i = from; i < to; ++i) {
    const SmallRow row = small_row(i);
    std::vector<std::byte> payload(16 + sizeof row);
    const std::int64_t source = 7;
    std::memcpy(payload.data(), &source, 8);
    std::memcpy(payload.data() + 8, &i, 8);
    std::memcpy(payload.data() + 16, &row, sizeof row);
    const auditpipe::internal::FrameHeader fh{
        auditpipe::internal::frame_magic, static_cast<std::uint32_t>(payload.size()),
        auditpipe::internal::crc32c(payload.data(), payload.size()), 0};
    f.write(reinterpret_cast<const char*>(&fh), sizeof fh);
    f.write(reinterpret_cast<const char*>(payload.data()),
            static_cast<std::streamsize>(payload.size()));
  }
}

TEST(SpillFile, AVersion1SegmentIsStillRead) {
  TempDir dir;
  const fs::path path = dir.path() / "spill-0000000000000001.seg";
  write_version_1(path, 0, 25);
  const RecordCodec codec(small());
  {
    SpillReader reader(path, codec);
    EXPECT_EQ(reader.version(), 1u);
    EXPECT_FALSE(reader.sealed_records().has_value());
  }
  const auto seqs = read_all({path});
  ASSERT_EQ(seqs.size(), 25u);
  for (std::int64_t i = 0; i < 25; ++i) EXPECT_EQ(seqs[static_cast<std::size_t>(i)], i);
  // Counted at start from its size (fixed-size frames), and replayed first.
  SpillWriter w(dir.path(), small(), layout, 1 << 30, 1 << 20);
  EXPECT_EQ(w.records(), 25u);
  write_records(w, 25, 30);
  EXPECT_EQ(w.records(), 30u);
  w.seal();
  const auto all = read_all(w.sealed_segments());
  ASSERT_EQ(all.size(), 30u);
  for (std::int64_t i = 0; i < 30; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i);
}

TEST(SpillFile, TheDirectoryCapIsEnforced) {
  TempDir dir;
  SpillWriter w(dir.path(), small(), layout, 32 + 10 * frame, 1 << 20);
  write_records(w, 0, 10);
  const SmallRow row = small_row(10);
  const RecordRef r{7, 10, reinterpret_cast<const std::byte*>(&row)};
  EXPECT_EQ(w.append(std::span(&r, 1)), SpillWriter::Result::full);
  EXPECT_NE(w.last_error().find("cap"), std::string::npos);
  EXPECT_EQ(w.records(), 10u);
}

TEST(SpillFile, AnUnusableDirectoryIsAnErrorAtStart) {
  TempDir dir;
  const fs::path file = dir.path() / "a-file";
  std::ofstream(file) << "x";
  EXPECT_THROW(SpillWriter(file, small(), layout, 1 << 20, 1 << 20), auditpipe::error);
}

std::uint64_t seal_of(const fs::path& segment) {
  SegmentHeader h{};
  std::ifstream(segment, std::ios::binary).read(reinterpret_cast<char*>(&h), sizeof h);
  return h.seal;
}

void clear_seal(const fs::path& segment) {
  const int fd = ::open(segment.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::uint64_t zero = 0;
  ASSERT_EQ(::pwrite(fd, &zero, 8, auditpipe::internal::seal_offset), 8);
  ::close(fd);
}

TEST(SpillFile, RecordsAreCountedAcrossAppendsRotationAndRestart) {
  TempDir dir;
  std::vector<fs::path> segments;
  {
    SpillWriter w(dir.path(), small(), layout, 1 << 30, 64 * frame);
    EXPECT_EQ(w.records(), 0u);
    write_records(w, 0, 500);
    EXPECT_EQ(w.records(), 500u);
    std::vector<SmallRow> rows;
    std::vector<RecordRef> refs;
    for (std::int64_t i = 500; i < 600; ++i) rows.push_back(small_row(i));
    for (std::int64_t i = 500; i < 600; ++i)
      refs.push_back(
          {7, i, reinterpret_cast<const std::byte*>(&rows[static_cast<std::size_t>(i - 500)])});
    ASSERT_EQ(w.append(refs), SpillWriter::Result::ok);
    EXPECT_EQ(w.records(), 600u);
    w.seal();
    segments = w.sealed_segments();
    ASSERT_GT(segments.size(), 2u);
    const std::uint64_t first = read_all({segments.front()}).size();
    w.replayed(segments.front(), 10);
    EXPECT_EQ(w.records(), 590u);
    w.remove(segments.front());  // replayed whole: the rest of its count goes
    EXPECT_EQ(w.records(), 600u - first);
    segments.erase(segments.begin());
  }
  std::uint64_t in_files = 0;
  for (const auto& s : segments) {
    const std::uint64_t seal = seal_of(s);
    ASSERT_NE(seal & auditpipe::internal::sealed_flag, 0u) << s;
    in_files += seal & ~auditpipe::internal::sealed_flag;
  }
  EXPECT_EQ(in_files, read_all(segments).size());
  SpillWriter again(dir.path(), small(), layout, 1 << 30, 64 * frame);
  EXPECT_EQ(again.records(), in_files);
}

TEST(SpillFile, ASegmentACrashLeftOpenIsCountedFrameByFrame) {
  TempDir dir;
  fs::path segment;
  {
    SpillWriter w(dir.path(), small(), layout, 1 << 30, 1 << 20);
    write_records(w, 0, 40);
    w.seal();
    segment = w.sealed_segments().at(0);
  }
  EXPECT_EQ(seal_of(segment), auditpipe::internal::sealed_flag | 40u);
  clear_seal(segment);                                   // as a kill -9 before the seal leaves it
  fs::resize_file(segment, fs::file_size(segment) - 3);  // and a torn last frame
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(32 + 7 * frame + 30));  // and one damaged frame
    f.put('\x01');
  }
  SpillWriter w(dir.path(), small(), layout, 1 << 30, 1 << 20);
  EXPECT_EQ(w.records(), 38u);
}

TEST(SpillFile, ASegmentOfAnotherLayoutCountsNoRecords) {
  TempDir dir;
  write_version_1(dir.path() / "spill-0000000000000001.seg", 0, 5, layout + 1);
  SpillWriter w(dir.path(), small(), layout, 1 << 30, 1 << 20);
  EXPECT_EQ(w.records(), 0u);
}

}  // namespace
