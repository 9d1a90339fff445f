// RecordReader: framing of JSON lines and CSV/TSV records, with offsets and
// line numbers independent of chunk sizes and of where reading started;
// BOM, CRLF, blank, too-long and incomplete records.
#include "input/record_reader.h"

#include <gtest/gtest.h>

#include <vector>

#include "ingest_test_util.h"

namespace {

using auditpipe::ingest::ByteSource;
using auditpipe::ingest::Format;
using auditpipe::ingest::memory_byte_source;
using auditpipe::ingest::RawRecord;
using auditpipe::ingest::RecordReader;
using Kind = RawRecord::Kind;

struct Rec {
  std::string text;
  std::uint64_t offset, end_offset, line;
  Kind kind;
  bool operator==(const Rec&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Rec& r) {
  return os << "{\"" << r.text << "\" @" << r.offset << ".." << r.end_offset << " line " << r.line
            << " kind " << static_cast<int>(r.kind) << "}";
}

std::vector<Rec> read_all(ByteSource& src, Format f, std::size_t chunk, std::size_t max = 1 << 20,
                          std::uint64_t first_line = 1) {
  RecordReader reader(src, f, max, first_line, chunk);
  std::vector<Rec> out;
  RawRecord r;
  while (reader.next(r)) {
    out.push_back({std::string(r.text), r.offset, r.end_offset, r.line, r.kind});
    if (r.kind == Kind::incomplete) break;
  }
  return out;
}

std::vector<Rec> read_string(const std::string& data, Format f, std::size_t chunk,
                             std::size_t max = 1 << 20) {
  auto src = memory_byte_source(data);
  return read_all(*src, f, chunk, max);
}

const std::size_t chunks[] = {1, 2, 3, 5, 7, 16, 64, RecordReader::default_chunk_bytes};

TEST(RecordReader, JsonLinesWithOffsetsAndLines) {
  const std::string data = "{\"a\":1}\n{\"b\":2}\r\n\n   \n{\"c\":3}\n";
  const std::vector<Rec> want = {
      {"{\"a\":1}", 0, 8, 1, Kind::record},   {"{\"b\":2}", 8, 17, 2, Kind::record},
      {"", 17, 18, 3, Kind::empty},           {"   ", 18, 22, 4, Kind::empty},
      {"{\"c\":3}", 22, 30, 5, Kind::record},
  };
  for (std::size_t chunk : chunks)
    EXPECT_EQ(read_string(data, Format::jsonl, chunk), want) << chunk;
}

TEST(RecordReader, OffsetsDoNotDependOnChunkSize) {
  const std::string data = ingest_test::lines(500);
  const auto reference = read_string(data, Format::jsonl, RecordReader::default_chunk_bytes);
  ASSERT_EQ(reference.size(), 500u);
  for (std::size_t chunk : chunks) EXPECT_EQ(read_string(data, Format::jsonl, chunk), reference);
}

TEST(RecordReader, ResumingAfterSkipToGivesTheSameOffsets) {
  const std::string data = ingest_test::lines(200);
  const auto all = read_string(data, Format::jsonl, 64);
  const Rec& at = all[77];
  for (std::size_t chunk : {std::size_t{3}, std::size_t{4096}}) {
    auto src = memory_byte_source(data);
    ASSERT_TRUE(src->skip_to(at.offset));
    const auto rest = read_all(*src, Format::jsonl, chunk, 1 << 20, at.line);
    ASSERT_EQ(rest.size(), all.size() - 77);
    EXPECT_EQ(rest.front(), at);
    EXPECT_EQ(rest.back(), all.back());
  }
}

TEST(RecordReader, Utf8BomAtTheStartIsSkipped) {
  const std::string data = "\xEF\xBB\xBF{\"a\":1}\n{\"b\":2}\n";
  for (std::size_t chunk : chunks) {
    const auto recs = read_string(data, Format::jsonl, chunk);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0], (Rec{"{\"a\":1}", 3, 11, 1, Kind::record})) << chunk;
    EXPECT_EQ(recs[1].offset, 11u);
  }
  // Only at the start of the stream.
  const auto mid = read_string("{}\n\xEF\xBB\xBFx\n", Format::jsonl, 2);
  EXPECT_EQ(mid[1].text, "\xEF\xBB\xBFx");
}

TEST(RecordReader, TooLongRecordsAreSkippedToTheirEnd) {
  const std::string big(1000, 'x');
  const std::string data = "{\"a\":1}\n" + big + "\n{\"b\":2}\n";
  for (std::size_t chunk : chunks) {
    const auto recs = read_string(data, Format::jsonl, chunk, 100);
    ASSERT_EQ(recs.size(), 3u) << chunk;
    EXPECT_EQ(recs[1].kind, Kind::too_long);
    EXPECT_EQ(recs[1].text, big.substr(0, 100));
    EXPECT_EQ(recs[1].offset, 8u);
    EXPECT_EQ(recs[1].end_offset, 1009u);
    EXPECT_EQ(recs[1].line, 2u);
    EXPECT_EQ(recs[2], (Rec{"{\"b\":2}", 1009, 1017, 3, Kind::record})) << chunk;
  }
  // Exactly max bytes is not too long.
  const auto exact = read_string(std::string(100, 'y') + "\n", Format::jsonl, 7, 100);
  EXPECT_EQ(exact[0].kind, Kind::record);
}

TEST(RecordReader, IncompleteLastLineIsReadAgainWhenTheFileGrows) {
  testing_support::TempDir dir;
  const std::string path = dir.file("grow.jsonl");
  ingest_test::write_file(path, "{\"a\":1}\n{\"b\":");
  auto src = auditpipe::ingest::open_byte_source(path);
  RecordReader reader(*src, Format::jsonl, 1 << 20, 1, 4);
  RawRecord r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.text, "{\"a\":1}");
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.kind, Kind::incomplete);
  EXPECT_EQ(r.text, "{\"b\":");
  EXPECT_EQ(r.offset, 8u);
  ASSERT_TRUE(reader.next(r));  // nothing new yet
  EXPECT_EQ(r.kind, Kind::incomplete);
  ingest_test::append_file(path, "2}\n{\"c\":3}\n");
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.kind, Kind::record);
  EXPECT_EQ(r.text, "{\"b\":2}");
  EXPECT_EQ(r.offset, 8u);
  EXPECT_EQ(r.line, 2u);
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.text, "{\"c\":3}");
  EXPECT_FALSE(reader.next(r));
  EXPECT_EQ(reader.offset(), 24u);
  EXPECT_EQ(reader.line(), 4u);
}

TEST(RecordReader, CsvQuotedFieldsSpanLines) {
  const std::string data =
      "id,msg,n\r\n"
      "1,\"hello, world\",2\r\n"
      "2,\"two\nlines \"\"quoted\"\"\",3\n"
      "3,plain \"inner\" quote,4\n"
      "4,\"\",5";
  const std::vector<Rec> want = {
      {"id,msg,n", 0, 10, 1, Kind::record},
      {"1,\"hello, world\",2", 10, 30, 2, Kind::record},
      {"2,\"two\nlines \"\"quoted\"\"\",3", 30, 57, 3, Kind::record},
      {"3,plain \"inner\" quote,4", 57, 81, 5, Kind::record},
      {"4,\"\",5", 81, 87, 6, Kind::incomplete},
  };
  for (std::size_t chunk : chunks) EXPECT_EQ(read_string(data, Format::csv, chunk), want) << chunk;
}

// A quote that opens a field on one line and one on a later line that
// closes it with text after it: the record is flagged, so that the loader
// rejects its first line and reads the others again. Text after a closing
// quote on one line, and a field that spans lines properly, are not.
TEST(RecordReader, CsvStrayQuoteAcrossLinesIsFlagged) {
  const std::string data =
      "1,\"stray\n"
      "2,taken in\n"
      "3,curl \"closes\" it\n"
      "4,\"two\nlines\",x\n"
      "5,\"a\"b on one line\n";
  for (std::size_t chunk : chunks) {
    auto src = memory_byte_source(data);
    RecordReader reader(*src, Format::csv, 1 << 20, 1, chunk);
    RawRecord raw;
    std::vector<std::pair<std::uint64_t, bool>> seen;  // (line, stray)
    while (reader.next(raw)) seen.emplace_back(raw.line, reader.stray_quote());
    const std::vector<std::pair<std::uint64_t, bool>> want = {{1, true}, {4, false}, {6, false}};
    EXPECT_EQ(seen, want) << chunk;
  }
}

TEST(RecordReader, TsvUsesTabsAndTheSameQuotes) {
  const std::string data = "a\tb\n\"x\ty\"\t\"multi\nline\"\n";
  for (std::size_t chunk : chunks) {
    const auto recs = read_string(data, Format::tsv, chunk);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[1], (Rec{"\"x\ty\"\t\"multi\nline\"", 4, 23, 2, Kind::record}));
  }
}

TEST(RecordReader, GzipSourceWithTinyChunks) {
  testing_support::TempDir dir;
  const std::string data = ingest_test::lines(300);
  ingest_test::write_file(dir.file("a"), data);
  ingest_test::run("gzip -c " + dir.file("a") + " > " + dir.file("a.gz"));
  auto src = auditpipe::ingest::open_byte_source(dir.file("a.gz"));
  EXPECT_EQ(read_all(*src, Format::jsonl, 5), read_string(data, Format::jsonl, 4096));
}

TEST(RecordReader, TextIsFollowedByPadding) {
  const std::string data = "{\"a\":1}\n";
  auto src = memory_byte_source(data);
  RecordReader reader(*src, Format::jsonl, 16, 1, 1);
  RawRecord r;
  ASSERT_TRUE(reader.next(r));
  // The padding lies inside the reader's buffer: reading it is defined
  // (ASan would catch a short buffer).
  volatile char sink = 0;
  for (std::size_t i = 0; i < auditpipe::ingest::record_padding; ++i)
    sink = static_cast<char>(sink ^ r.text.data()[r.text.size() + i]);
  (void)sink;
}

}  // namespace
