// RecordReader + RowMapper make no heap allocation per record in steady
// state (JSON lines, repaired UTF-8 lines, CSV): counted with the replaced
// global operator new of tools/alloc_counter. Its own binary for that.
#include <gtest/gtest.h>

#include "alloc_counter.h"
#include "fake_target.h"
#include "input/byte_source.h"
#include "input/record_reader.h"
#include "input/row_mapper.h"

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using namespace auditpipe::ingest;

const std::vector<ColumnSpec> columns = {{"at", ColumnType::timestamp},
                                         {"user_name", ColumnType::text, 64, true},
                                         {"level", ColumnType::uint8},
                                         {"amount", ColumnType::float64, 0, true},
                                         {"ok", ColumnType::boolean},
                                         {"id", ColumnType::int64},
                                         {"note", ColumnType::text, 32, false, "none"},
                                         {"code", ColumnType::text, 32}};

// Reads every record, filling a NullTarget; the allocations after `warm` records.
std::size_t allocations_after_warmup(const std::string& data, Format format, MappingOptions opts,
                                     std::size_t warm, std::size_t& filled) {
  auto src = memory_byte_source(data);
  RecordReader reader(*src, format, 1 << 16, 1, 4096);
  RowMapper mapper(columns, format, std::move(opts));
  ingest_test::NullTarget target;
  std::string reason;
  reason.reserve(256);
  RawRecord r;
  std::size_t n = 0, before = 0;
  filled = 0;
  while (reader.next(r)) {
    if (r.kind != RawRecord::Kind::record) continue;
    if (mapper.needs_header()) {
      mapper.set_header(r);
      continue;
    }
    if (n++ == warm) before = auditpipe::tools::allocations_on_this_thread();
    if (mapper.fill(r, target, reason)) ++filled;
  }
  return auditpipe::tools::allocations_on_this_thread() - before;
}

TEST(RowMapperAllocations, JsonLinesInSteadyState) {
  std::string data;
  for (int i = 0; i < 20000; ++i) {
    data += R"({"at":"2026-11-30T12:34:56.)" + std::to_string(100000 + i % 900000) +
            R"(Z","user":{"name":"user-)" + std::to_string(i % 97) + R"(","id":)" +
            std::to_string(i) + R"(},"level":)" + std::to_string(i % 7) + R"(,"amount":)" +
            std::to_string(i) + R"(.25,"ok":true,"id":)" + std::to_string(i) +
            R"(,"code":12345,"extra":{"k":[1,2,3]}})" + "\n";
    if (i % 10 == 0) data += "{\"at\":0,\"ok\":1,\"id\":1,\"level\":1,\"code\":\"bad\xff\"}\n";
  }
  std::size_t filled = 0;
  const std::size_t allocs = allocations_after_warmup(
      data, Format::jsonl, MappingOptions{{{"user_name", "user.name"}}, {}}, 100, filled);
  EXPECT_EQ(filled, 22000u);
  EXPECT_EQ(allocs, 0u);
}

TEST(RowMapperAllocations, CsvInSteadyState) {
  std::string data = "at,user_name,level,amount,ok,id,code\n";
  for (int i = 0; i < 20000; ++i)
    data += "2026-11-30 12:34:56Z,\"user, " + std::to_string(i % 97) + "\"\"q\"\"\"," +
            std::to_string(i % 7) + "," + std::to_string(i) + ".5,yes," + std::to_string(i) + ",c" +
            std::to_string(i) + "\n";
  std::size_t filled = 0;
  const std::size_t allocs = allocations_after_warmup(data, Format::csv, {}, 100, filled);
  EXPECT_EQ(filled, 20000u);
  EXPECT_EQ(allocs, 0u);
}

}  // namespace
