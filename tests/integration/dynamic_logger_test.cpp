// DynamicLogger: records of a runtime Schema through the pipeline, into a
// test sink (the bytes and keys the engine hands over) and a real SQLite
// file (values, NULLs, keys as stored): every setter, the range checks,
// truncation counted, caller-given keys (also through the spill
// directory), and records held past their logger.
#include "auditpipe/dynamic_logger.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "auditpipe/sqlite/sqlite_sink.h"
#include "collecting_sink.h"
#include "eventually.h"
#include "temp_dir.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::ColumnType;
using auditpipe::DynamicLogger;
using auditpipe::Options;
using auditpipe::Schema;
using auditpipe::Status;
using testing_support::CollectingSink;
using testing_support::TempDir;

// Column indexes of every_type().
enum : std::size_t { at, flag, i8, i16, i32, i64, u8, u16, u32, amount, name, note, maybe };

Schema every_type() {
  return Schema("dyn_log", {
                               {"at", ColumnType::timestamp},
                               {"flag", ColumnType::boolean},
                               {"i8", ColumnType::int8},
                               {"i16", ColumnType::int16},
                               {"i32", ColumnType::int32},
                               {"i64", ColumnType::int64},
                               {"u8", ColumnType::uint8},
                               {"u16", ColumnType::uint16},
                               {"u32", ColumnType::uint32},
                               {"amount", ColumnType::float64, 0, true},
                               {"name", ColumnType::text, 8},
                               {"note", ColumnType::text, 32, true},
                               {"maybe", ColumnType::int32, 0, true},
                           });
}

void fill(DynamicLogger::Record& r, std::int64_t id) {
  r.set_timestamp(at, auditpipe::timestamp{1'700'000'000'000'000 + id});
  r.set_bool(flag, id % 2 == 1);
  EXPECT_TRUE(r.set_integer(i8, -128));
  EXPECT_TRUE(r.set_integer(i16, 32767));
  EXPECT_TRUE(r.set_integer(i32, -2'147'483'648LL));
  EXPECT_TRUE(r.set_integer(i64, id));
  EXPECT_TRUE(r.set_integer(u8, 255));
  EXPECT_TRUE(r.set_integer(u16, 65535));
  EXPECT_TRUE(r.set_integer(u32, 4'294'967'295LL));
  r.set_float64(amount, 12.5);
  EXPECT_FALSE(r.set_text(name, "alice"));
  r.set_text(note, "n" + std::to_string(id));
  r.set_null(note);  // set, then NULL again
  if (id % 2 == 0) r.set_integer(maybe, 7);
}

TEST(DynamicLogger, RecordsReachTheSinkWithTheirValuesAndNulls) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(every_type(), sink);
  for (std::int64_t id = 0; id < 10; ++id) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    fill(r, id);
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_FALSE(r);
    EXPECT_EQ(r.commit(), Status::empty_handle);
  }
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.committed, 10u);
  EXPECT_EQ(report.stats.written, 10u);
  const auto& d = logger.schema().descriptor();
  const auto rows = sink->rows();
  ASSERT_EQ(rows.size(), 10u);
  std::set<std::int64_t> ids;
  for (const auto& row : rows) {
    const std::byte* p = row.data();
    const std::int64_t id = auditpipe::read_integer(p, d.columns[i64]);
    ids.insert(id);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[at]), 1'700'000'000'000'000 + id);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[flag]), id % 2);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[i8]), -128);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[i16]), 32767);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[i32]), -2'147'483'648LL);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[u8]), 255);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[u16]), 65535);
    EXPECT_EQ(auditpipe::read_integer(p, d.columns[u32]), 4'294'967'295LL);
    EXPECT_FALSE(auditpipe::is_null(p, d.columns[amount]));
    EXPECT_EQ(auditpipe::read_float64(p, d.columns[amount]), 12.5);
    EXPECT_EQ(auditpipe::read_text(p, d.columns[name]), "alice");
    EXPECT_EQ(auditpipe::read_text_flags(p, d.columns[name]), 0u);
    EXPECT_TRUE(auditpipe::is_null(p, d.columns[note]));
    EXPECT_EQ(auditpipe::is_null(p, d.columns[maybe]), id % 2 == 1);
    if (id % 2 == 0) {
      EXPECT_EQ(auditpipe::read_integer(p, d.columns[maybe]), 7);
    }
  }
  EXPECT_EQ(ids.size(), 10u);
}

TEST(DynamicLogger, AcquiredRecordsHoldTheSchemasDefaults) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(every_type(), sink);
  {
    auto r = logger.acquire();
    fill(r, 1);
    r.reset();  // given back dirty: the slot is reset to the prototype
  }
  ASSERT_EQ(logger.acquire().commit(), Status::ok);
  logger.close();
  const auto& d = logger.schema().descriptor();
  const auto rows = sink->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::memcmp(rows[0].data(), d.prototype, d.record_size), 0);
  EXPECT_TRUE(auditpipe::is_null(rows[0].data(), d.columns[amount]));
  EXPECT_EQ(auditpipe::read_text(rows[0].data(), d.columns[name]), "");
}

TEST(DynamicLogger, SetIntegerRefusesValuesOutsideTheColumnsTypeAndLeavesIt) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(every_type(), sink);
  auto r = logger.acquire();
  ASSERT_TRUE(r);
  const auto& d = logger.schema().descriptor();
  struct Case {
    std::size_t column;
    std::int64_t lowest, highest;
  };
  for (const Case& c :
       {Case{flag, 0, 1}, Case{i8, -128, 127}, Case{i16, -32768, 32767},
        Case{i32, -2'147'483'648LL, 2'147'483'647LL}, Case{u8, 0, 255}, Case{u16, 0, 65535},
        Case{u32, 0, 4'294'967'295LL}, Case{maybe, -2'147'483'648LL, 2'147'483'647LL}}) {
    SCOPED_TRACE(std::string(d.columns[c.column].name));
    EXPECT_TRUE(r.set_integer(c.column, c.lowest));
    EXPECT_EQ(auditpipe::read_integer(r.data(), d.columns[c.column]), c.lowest);
    EXPECT_TRUE(r.set_integer(c.column, c.highest));
    EXPECT_EQ(auditpipe::read_integer(r.data(), d.columns[c.column]), c.highest);
    EXPECT_FALSE(r.set_integer(c.column, c.lowest - 1));
    EXPECT_FALSE(r.set_integer(c.column, c.highest + 1));
    EXPECT_EQ(auditpipe::read_integer(r.data(), d.columns[c.column]), c.highest);  // unchanged
  }
  EXPECT_TRUE(r.set_integer(i64, INT64_MIN));
  EXPECT_TRUE(r.set_integer(i64, INT64_MAX));
  // A refused value leaves a nullable column NULL.
  r.set_null(maybe);
  EXPECT_FALSE(r.set_integer(maybe, INT64_MAX));
  EXPECT_TRUE(auditpipe::is_null(r.data(), d.columns[maybe]));
  r.reset();
}

TEST(DynamicLogger, TextIsCutAtACharacterBoundaryAndCounted) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(every_type(), sink);
  auto r = logger.acquire();
  // 7 bytes of ASCII, then a 2-byte character that would end at byte 9.
  EXPECT_TRUE(r.set_text(name, "abcdefg\xC3\xA9"));
  EXPECT_FALSE(r.set_text(note, std::string(32, 'x')));
  ASSERT_EQ(r.commit(), Status::ok);
  auto r2 = logger.acquire();
  EXPECT_TRUE(r2.set_text(note, std::string(33, 'y')));
  ASSERT_EQ(r2.commit(), Status::ok);
  const auto report = logger.close();
  EXPECT_EQ(report.stats.truncated_fields, 2u);
  const auto& d = logger.schema().descriptor();
  const auto rows = sink->rows();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    if (auditpipe::read_text(row.data(), d.columns[name]).empty()) {
      EXPECT_EQ(auditpipe::read_text(row.data(), d.columns[note]), std::string(32, 'y'));
      EXPECT_FALSE(auditpipe::is_null(row.data(), d.columns[note]));
    } else {
      EXPECT_EQ(auditpipe::read_text(row.data(), d.columns[name]), "abcdefg");
      EXPECT_EQ(auditpipe::read_text(row.data(), d.columns[note]), std::string(32, 'x'));
    }
  }
}

// A column sized in characters (a schema read from VARCHAR(n)): n
// characters of any width are kept whole; more are cut to n, and counted.
TEST(DynamicLogger, TextWithALimitOfCharactersIsCutToThemNotToItsBytes) {
  auditpipe::ColumnSpec chars{"name", auditpipe::ColumnType::text, 40};
  chars.max_chars = 10;
  const auditpipe::Schema schema("chars", {chars});
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(schema, sink);
  const std::string cjk = "\xE6\x97\xA5";        // 3 bytes
  const std::string emoji = "\xF0\x9F\x98\x80";  // 4 bytes
  std::string ten_cjk, ten_emoji;
  for (int i = 0; i < 10; ++i) ten_cjk += cjk, ten_emoji += emoji;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ten_cjk, ten_cjk},             // 30 bytes
      {ten_emoji, ten_emoji},         // 40 bytes
      {ten_cjk + cjk, ten_cjk},       // 11 characters: cut
      {"abcdefghijk", "abcdefghij"},  // 11 characters: cut
      {ten_emoji + "x", ten_emoji},   // 41 bytes: cut by both limits
      {"\x80" + std::string(10, 'a'), "\xEF\xBF\xBD" + std::string(9, 'a')},  // repaired, then cut
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto r = logger.acquire();
    const bool cut = r.set_text(0, cases[i].first);
    EXPECT_EQ(cut, i >= 2 && i <= 4) << i;
    ASSERT_EQ(r.commit(1, static_cast<std::int64_t>(i)), Status::ok);
  }
  // Valid text over the limit of characters written through data() (the
  // layout itself, within the bytes): the writer cuts it. Before, only
  // text it had to repair was cut, and the server refused the rest.
  const auditpipe::Column& column = schema.descriptor().columns[0];
  {
    auto r = logger.acquire();
    std::byte* field = r.data() + column.offset;
    const std::string eleven = ten_cjk + cjk;
    std::memcpy(field + auditpipe::text_layout::data_offset, eleven.data(), eleven.size());
    const auto size = static_cast<std::uint32_t>(eleven.size());
    std::memcpy(field + auditpipe::text_layout::size_offset, &size, sizeof size);
    ASSERT_EQ(r.commit(1, static_cast<std::int64_t>(cases.size())), Status::ok);
  }
  const auto report = logger.close();
  EXPECT_EQ(report.stats.truncated_fields, 5u);
  const auto rows = sink->rows();
  const auto keys = sink->keys();
  ASSERT_EQ(rows.size(), cases.size() + 1);
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const auto i = static_cast<std::size_t>(keys[j].second);
    ASSERT_LE(i, cases.size());
    EXPECT_EQ(auditpipe::read_text(rows[j].data(), column),
              i < cases.size() ? cases[i].second : ten_cjk)
        << i;
  }
}

TEST(DynamicLogger, CommitWithAKeyStoresExactlyThatKey) {
  auto sink = std::make_shared<CollectingSink>();
  Options o;
  o.source_id_base = 1000;
  DynamicLogger logger(every_type(), sink, o);
  for (std::int64_t seq = 0; seq < 5; ++seq) {
    auto r = logger.acquire();
    ASSERT_EQ(r.commit(7, 100 + seq * 10), Status::ok);  // not dense
  }
  ASSERT_EQ(logger.acquire().commit(), Status::ok);  // the thread's own: seq 0, untouched
  const auto report = logger.close();
  EXPECT_EQ(report.stats.committed, 6u);
  EXPECT_EQ(report.stats.written, 6u);
  auto keys = sink->keys();
  std::sort(keys.begin(), keys.end());
  const std::vector<CollectingSink::Key> expected{{7, 100}, {7, 110}, {7, 120},
                                                  {7, 130}, {7, 140}, {1000, 0}};
  auto sorted = expected;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(keys, sorted);
}

TEST(DynamicLogger, KeyedRecordsKeepTheirKeysThroughTheSpillDirectory) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();  // the database is away: the pool fills, the rest spills
  Options o;
  o.capacity = 8;
  o.batch_size = 4;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir.path() / "spill";
  DynamicLogger logger(every_type(), sink, o);
  constexpr int n = 200;
  for (int i = 0; i < n; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r) << i;
    r.set_integer(i64, i);
    ASSERT_EQ(r.commit(42, 5000 + 3 * i), Status::ok) << i;
  }
  EXPECT_GE(logger.stats().spilled, static_cast<std::uint64_t>(n - 8));
  sink->release();
  EXPECT_TRUE(testing_support::eventually([&] {
    const auto s = logger.stats();
    return s.written + s.replayed == n;
  }));
  const auto report = logger.close();
  EXPECT_EQ(report.stats.committed, static_cast<std::uint64_t>(n));
  std::set<CollectingSink::Key> keys;
  for (const auto& k : sink->keys()) keys.insert(k);
  ASSERT_EQ(keys.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(keys.count({42, 5000 + 3 * i}), 1u) << i;
}

TEST(DynamicLogger, KeyedRecordsKeepTheirKeysWhenAFullSpillFallsBackToThePool) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();
  Options o;
  o.capacity = 8;
  o.batch_size = 4;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.spill_max_bytes = 4096;  // room for a few records only
  o.max_wait = 2s;
  DynamicLogger logger(every_type(), sink, o);
  std::set<CollectingSink::Key> committed;
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    sink->release();
  });
  for (int i = 0; i < 100; ++i) {
    auto r = logger.acquire();
    if (!r) continue;
    if (r.commit(9, i) == Status::ok) committed.insert({9, i});
  }
  releaser.join();
  const auto report = logger.close();
  EXPECT_GT(report.stats.spill_refused, 0u);
  std::set<CollectingSink::Key> keys;
  for (const auto& k : sink->keys()) keys.insert(k);
  EXPECT_EQ(keys, committed);
  EXPECT_EQ(report.stats.committed, committed.size());
}

// A durable pool keeps keyed records with their keys for the next start,
// whose Schema (built again, equal) opens the same file; the thread's own
// seqs carry on untouched by the keyed ones.
TEST(DynamicLogger, ADurablePoolKeepsKeyedRecordsWithTheirKeys) {
  TempDir dir;
  Options o;
  o.capacity = 64;
  o.batch_size = 8;
  o.durable_path = dir.path() / "pool.dat";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  {
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    DynamicLogger logger(every_type(), down, o);
    for (int i = 0; i < 20; ++i) {
      auto r = logger.acquire();
      r.set_integer(i64, i);
      ASSERT_EQ(r.commit(5, 1000 + i), Status::ok);
    }
    ASSERT_EQ(logger.acquire().commit(), Status::ok);  // the thread's seq 0
    const auto report = logger.close(50ms);
    EXPECT_EQ(report.stats.committed, 21u);
    EXPECT_EQ(report.unwritten, 21u);  // kept in the file
  }
  auto up = std::make_shared<CollectingSink>();
  up->keep_bytes();
  {
    DynamicLogger logger(every_type(), up, o);
    ASSERT_EQ(logger.acquire().commit(), Status::ok);  // the thread's seq 1
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.recovered, 21u);
    EXPECT_EQ(report.stats.written, 22u);
  }
  std::set<CollectingSink::Key> keys;
  std::int64_t own_source = -1;
  for (const auto& k : up->keys()) {
    keys.insert(k);
    if (k.first != 5) own_source = k.first;
  }
  ASSERT_EQ(keys.size(), 22u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(keys.count({5, 1000 + i}), 1u) << i;
  EXPECT_EQ(keys.count({own_source, 0}), 1u);
  EXPECT_EQ(keys.count({own_source, 1}), 1u);
}

TEST(DynamicLogger, ThreadsCommittingTheirOwnKeysLoseNone) {
  auto sink = std::make_shared<CollectingSink>();
  Options o;
  o.capacity = 256;
  DynamicLogger logger(every_type(), sink, o);
  constexpr int threads = 4, per_thread = 2000;
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto r = logger.acquire();
        ASSERT_TRUE(r);
        r.set_integer(i64, i);
        r.set_text(name, "t" + std::to_string(t));
        // Half under the thread's key, half under the caller's.
        ASSERT_EQ(i % 2 ? r.commit(t, i) : r.commit(), Status::ok);
      }
    });
  }
  for (auto& p : producers) p.join();
  const auto report = logger.close();
  EXPECT_EQ(report.stats.committed, static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(threads * per_thread));
  std::set<CollectingSink::Key> keys;
  for (const auto& k : sink->keys()) keys.insert(k);
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(threads * per_thread));
}

TEST(DynamicLogger, ARecordKeptPastItsLoggerCanStillBeCommittedOrLetGo) {
  auto sink = std::make_shared<CollectingSink>();
  DynamicLogger::Record kept, let_go, keyed;
  {
    // The only owner of the schema besides the logger's engine.
    auto schema = std::make_shared<const Schema>(every_type());
    DynamicLogger logger(std::move(schema), sink);
    kept = logger.acquire();
    let_go = logger.acquire();
    keyed = logger.acquire();
    ASSERT_TRUE(kept && let_go && keyed);
    kept.set_text(name, "late");
  }  // the logger closes; its engine waits for the records
  keyed.set_text(note, "the schema is still there");
  EXPECT_EQ(keyed.commit(1, 1), Status::closed);
  EXPECT_EQ(kept.commit(), Status::closed);
  let_go.reset();  // the last one frees the engine, then the schema
  EXPECT_FALSE(let_go);
  EXPECT_TRUE(sink->keys().empty());
}

#ifdef NDEBUG
// A release build: a setter of the wrong type or an index out of range
// writes nothing (set_float64 on an int32 column wrote the next column's
// bytes; set_text on an integer wrote past it), and the record is given
// back at commit, counted as abandoned, never stored without the value.
TEST(DynamicLogger, AWrongIndexOrSetterWritesNothingAndTheRecordIsGivenBack) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  DynamicLogger logger(every_type(), sink);
  const std::vector<std::function<void(DynamicLogger::Record&)>> misuses = {
      [](DynamicLogger::Record& r) { r.set_float64(i32, 1.0); },
      [](DynamicLogger::Record& r) { EXPECT_FALSE(r.set_text(i64, "zzzzzzzz")); },
      [](DynamicLogger::Record& r) { EXPECT_FALSE(r.set_integer(name, 1)); },
      [](DynamicLogger::Record& r) { EXPECT_FALSE(r.set_integer(maybe + 1, 1)); },
      [](DynamicLogger::Record& r) { r.set_null(i64); },
      [](DynamicLogger::Record& r) { r.set_bool(amount, true); },
      [](DynamicLogger::Record& r) { r.set_timestamp(u32, auditpipe::timestamp{1}); },
  };
  std::int64_t id = 0;
  for (const auto& misuse : misuses) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    fill(r, id);
    misuse(r);
    EXPECT_EQ(r.commit(1, id), Status::wrong_setter) << id;
    EXPECT_FALSE(r);
    ++id;
  }
  // A record filled right after them is stored, its neighbours intact.
  auto r = logger.acquire();
  ASSERT_TRUE(r);
  fill(r, 100);
  ASSERT_EQ(r.commit(1, 100), Status::ok);
  DynamicLogger::Record empty;
  empty.set_float64(amount, 1.0);  // an empty record: nothing to write into
  EXPECT_EQ(empty.commit(), Status::empty_handle);
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.written, 1u);
  EXPECT_EQ(report.stats.abandoned, misuses.size());
  EXPECT_EQ(report.stats.pool_in_use, 0u);
  const auto& d = logger.schema().descriptor();
  const auto rows = sink->rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(auditpipe::read_integer(rows[0].data(), d.columns[i32]), -2'147'483'648LL);
  EXPECT_EQ(auditpipe::read_integer(rows[0].data(), d.columns[i64]), 100);
}
#else
// Debug builds stop at what release builds give back at commit.
TEST(DynamicLoggerDeathTest, AWrongIndexOrSetterIsCaughtInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the logger has threads
  auto sink = std::make_shared<CollectingSink>();
  DynamicLogger logger(every_type(), sink);
  auto r = logger.acquire();
  ASSERT_TRUE(r);
  EXPECT_DEATH(r.set_integer(maybe + 1, 1), "column index out of range");
  EXPECT_DEATH(r.set_text(i64, "x"), "set_text\\(\\) of a non-text column");
  EXPECT_DEATH(r.set_integer(name, 1), "set_integer\\(\\) of a column that is not an integer");
  EXPECT_DEATH(r.set_null(i64), "set_null\\(\\) of a column that is not nullable");
  EXPECT_DEATH(r.set_float64(at, 1.0), "set_float64\\(\\) of a non-float64 column");
  r.reset();
  EXPECT_DEATH(r.set_bool(flag, true), "a setter of an empty DynamicLogger::Record");
}
#endif

TEST(DynamicLogger, ANullSchemaIsRefused) {
  EXPECT_THROW(DynamicLogger(std::shared_ptr<const Schema>(), std::make_shared<CollectingSink>()),
               auditpipe::error);
}

// SQLite, read back through its own C API.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path;
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  // The first column of the first row, as text; nothing for NULL or no row.
  std::optional<std::string> text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_) << ": " << sql;
    std::optional<std::string> v;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
      v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(DynamicLogger, StoresValuesAndNullsInSqlite) {
  TempDir dir;
  const std::string path = dir.file("dyn.db");
  {
    DynamicLogger logger(every_type(), auditpipe::sqlite::open("sqlite://" + path));
    for (std::int64_t id = 0; id < 4; ++id) {
      auto r = logger.acquire();
      fill(r, id);
      if (id == 3) {
        r.set_text(note, "it's \xC3\xA9");
        r.set_null(amount);
      }
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_TRUE(logger.close().drained);
  }
  Db db(path);
  EXPECT_EQ(db.text("SELECT count(*) FROM dyn_log"), "4");
  const std::string row2 = " FROM dyn_log WHERE i64 = 2";
  EXPECT_EQ(db.text("SELECT at" + row2), "1700000000000002");
  EXPECT_EQ(db.text("SELECT flag" + row2), "0");
  EXPECT_EQ(db.text("SELECT i8 || ',' || i16 || ',' || i32" + row2), "-128,32767,-2147483648");
  EXPECT_EQ(db.text("SELECT u8 || ',' || u16 || ',' || u32" + row2), "255,65535,4294967295");
  EXPECT_EQ(db.text("SELECT amount = 12.5" + row2), "1");
  EXPECT_EQ(db.text("SELECT name" + row2), "alice");
  EXPECT_EQ(db.text("SELECT note" + row2), std::nullopt);
  EXPECT_EQ(db.text("SELECT note IS NULL" + row2), "1");
  EXPECT_EQ(db.text("SELECT maybe" + row2), "7");
  EXPECT_EQ(db.text("SELECT maybe IS NULL FROM dyn_log WHERE i64 = 1"), "1");
  EXPECT_EQ(db.text("SELECT note FROM dyn_log WHERE i64 = 3"), "it's \xC3\xA9");
  EXPECT_EQ(db.text("SELECT amount IS NULL FROM dyn_log WHERE i64 = 3"), "1");
}

TEST(DynamicLogger, TheSameKeyTwiceIsOneRowInSqlite) {
  TempDir dir;
  const std::string path = dir.file("keys.db");
  const auto load = [&](std::int64_t value) {
    DynamicLogger logger(every_type(), auditpipe::sqlite::open("sqlite://" + path));
    for (std::int64_t seq = 0; seq < 3; ++seq) {
      auto r = logger.acquire();
      r.set_integer(i64, value);
      ASSERT_EQ(r.commit(77, seq), Status::ok);
    }
    auto again = logger.acquire();  // the same key twice in one run
    again.set_integer(i64, value);
    ASSERT_EQ(again.commit(77, 0), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  };
  load(1);
  load(2);  // the same input loaded again
  Db db(path);
  EXPECT_EQ(db.text("SELECT count(*) FROM dyn_log"), "3");
  EXPECT_EQ(db.text("SELECT group_concat(seq) FROM (SELECT seq FROM dyn_log WHERE source_id = "
                    "77 ORDER BY seq)"),
            "0,1,2");
  EXPECT_EQ(db.text("SELECT count(*) FROM dyn_log WHERE i64 = 1"), "3");  // the first load's
}

}  // namespace
