// ingest_parse: rows/s of the input side of `auditpipe ingest` on one
// thread: RecordReader framing + RowMapper::fill into a target that stores
// nothing, over 1,000,000 generated audit rows (~400 bytes of JSON lines,
// 10 fields: an ISO timestamp, integers, a float, a nested object, text) in
// memory; then the same rows as CSV. No I/O, no database: the parse ceiling.
//
//   ingest_parse [rows=1000000] [runs=3]
// Prints, per format, each run's rows/s and MB/s and the best.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <simdjson.h>

#include "input/byte_source.h"
#include "input/record_reader.h"
#include "input/row_mapper.h"

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using namespace auditpipe::ingest;

struct NullTarget {
  std::uint64_t sum = 0;  // something the compiler must keep
  void set_null(std::size_t c) noexcept { sum += c; }
  void set_bool(std::size_t, bool v) noexcept { sum += v; }
  bool set_integer(std::size_t, std::int64_t v) noexcept {
    sum += static_cast<std::uint64_t>(v);
    return true;
  }
  void set_float64(std::size_t, double v) noexcept { sum += static_cast<std::uint64_t>(v); }
  void set_timestamp(std::size_t, auditpipe::timestamp v) noexcept {
    sum += static_cast<std::uint64_t>(v.micros);
  }
  bool set_text(std::size_t, std::string_view v) noexcept {
    sum += v.size();
    return false;
  }
};

const std::vector<ColumnSpec> columns = {
    {"at", ColumnType::timestamp},       {"user_name", ColumnType::text, 64},
    {"user_id", ColumnType::int64},      {"level", ColumnType::uint8},
    {"action", ColumnType::text, 32},    {"resource", ColumnType::text, 128},
    {"status", ColumnType::int32},       {"latency_ms", ColumnType::float64},
    {"client_ip", ColumnType::text, 64}, {"message", ColumnType::text, 256, true}};

const char* const actions[] = {"login", "logout", "read", "write", "delete", "grant"};

std::string jsonl(std::size_t rows) {
  std::string out;
  out.reserve(rows * 420);
  char line[1024];
  for (std::size_t i = 0; i < rows; ++i) {
    const int n = std::snprintf(
        line, sizeof line,
        "{\"at\":\"2026-11-%02zuT%02zu:%02zu:%02zu.%06zuZ\",\"user\":{\"name\":\"user-%05zu\","
        "\"id\":%zu,\"dept\":\"engineering\"},\"level\":%zu,\"action\":\"%s\","
        "\"resource\":\"/api/v2/accounts/%zu/documents/%zu/revisions\",\"status\":%d,"
        "\"latency_ms\":%zu.%03zu,\"client_ip\":\"10.%zu.%zu.%zu\","
        "\"message\":\"request completed for tenant acme-%zu; session token rotated, cache "
        "refreshed, audit trail kept for compliance\"}\n",
        1 + i % 28, i % 24, i % 60, (i / 7) % 60, (i * 7919) % 1000000, i % 50000, 100000 + i,
        i % 7, actions[i % 6], i % 100000, i % 977, i % 10 == 0 ? 500 : 200, i % 2000, i % 1000,
        i % 256, (i / 256) % 256, i % 200, i % 400);
    out.append(line, static_cast<std::size_t>(n));
  }
  return out;
}

std::string csv(std::size_t rows) {
  std::string out =
      "at,user_name,user_id,level,action,resource,status,latency_ms,client_ip,message\n";
  out.reserve(rows * 330);
  char line[1024];
  for (std::size_t i = 0; i < rows; ++i) {
    const int n = std::snprintf(
        line, sizeof line,
        "2026-11-%02zuT%02zu:%02zu:%02zu.%06zuZ,user-%05zu,%zu,%zu,%s,"
        "/api/v2/accounts/%zu/documents/%zu/revisions,%d,%zu.%03zu,10.%zu.%zu.%zu,"
        "\"request completed for tenant acme-%zu; session token rotated, cache refreshed, "
        "audit trail kept for compliance\"\n",
        1 + i % 28, i % 24, i % 60, (i / 7) % 60, (i * 7919) % 1000000, i % 50000, 100000 + i,
        i % 7, actions[i % 6], i % 100000, i % 977, i % 10 == 0 ? 500 : 200, i % 2000, i % 1000,
        i % 256, (i / 256) % 256, i % 200, i % 400);
    out.append(line, static_cast<std::size_t>(n));
  }
  return out;
}

void run(const char* name, const std::string& data, Format format, std::size_t rows, int runs) {
  double best = 0;
  for (int r = 0; r < runs; ++r) {
    auto src = memory_byte_source(data);
    RecordReader reader(*src, format);
    MappingOptions mapping;
    if (format == Format::jsonl)
      mapping.maps = {{"user_name", "user.name"}, {"user_id", "user.id"}};
    RowMapper mapper(columns, format, mapping);
    NullTarget target;
    std::string reason;
    RawRecord rec;
    std::size_t filled = 0, refused = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (reader.next(rec)) {
      if (rec.kind != RawRecord::Kind::record) continue;
      if (mapper.needs_header()) {
        mapper.set_header(rec);
        continue;
      }
      if (mapper.fill(rec, target, reason)) {
        ++filled;
      } else if (refused++ == 0) {
        std::fprintf(stderr, "refused: %s\n", reason.c_str());
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = static_cast<double>(filled) / s;
    best = std::max(best, rate);
    std::printf(
        "%-5s run %d: %zu rows (%zu refused) in %.3f s: %.2f M rows/s, %.0f MB/s "
        "(%.0f bytes/row) [%llu]\n",
        name, r + 1, filled, refused, s, rate / 1e6, static_cast<double>(data.size()) / s / 1e6,
        static_cast<double>(data.size()) / static_cast<double>(rows),
        static_cast<unsigned long long>(target.sum % 1000));
  }
  std::printf("%-5s best: %.2f M rows/s\n", name, best / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  std::printf("simdjson kernel %s\n", simdjson::get_active_implementation()->name().c_str());
  {
    const std::string data = jsonl(rows);
    run("jsonl", data, Format::jsonl, rows, runs);
  }
  {
    const std::string data = csv(rows);
    run("csv", data, Format::csv, rows, runs);
  }
  return 0;
}
