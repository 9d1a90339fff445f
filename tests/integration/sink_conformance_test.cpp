// The same round-trip, exactly-once and hostile-input tests for every sink
// and write path, on real databases: a SQLite file, the throwaway MariaDB
// (bulk, text, LOAD DATA) and the throwaway PostgreSQL (COPY, INSERT). Each
// backend reads the table back through its own C API, not through the code
// under test.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/logger.h"
#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/postgresql/postgresql_sink.h"
#include "auditpipe/schema.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "auditpipe/utf8.h"
#include "eventually.h"
#include "multithreaded_fork.h"
#include "mysql_probe.h"
#include "postgresql_probe.h"
#include "temp_dir.h"
#include "verify_run.h"

namespace {

using namespace std::string_literals;
using auditpipe::Status;
using testing_support::AuditRow;

// A database holding the table audit_log, and a way to read it back.
class Backend {
 public:
  virtual ~Backend() = default;
  // A URL for the sink, with extra options appended.
  virtual std::string url(const std::string& options = "") = 0;
  virtual void drop_table() = 0;
  virtual long long scalar(const std::string& sql) = 0;
  // A statement with no result, as someone with write access would run it.
  virtual void exec(const std::string& sql) = 0;
  // A text column of the row with message_id = id, as raw bytes.
  virtual std::optional<std::string> text(const std::string& column, long long id) = 0;
  // PostgreSQL text cannot hold NUL: the writer replaces it with U+FFFD.
  virtual bool stores_nul() const { return true; }
  // The double column of the row with message_id = id, exactly.
  virtual std::optional<double> real(const std::string& column, long long id) {
    const auto t = text(column, id);
    if (!t) return std::nullopt;
    return std::strtod(t->c_str(), nullptr);  // servers print the shortest exact form
  }
  // The row's `at` as microseconds since the epoch, exactly.
  virtual long long at_micros(long long id) = 0;

  std::shared_ptr<auditpipe::Sink> open(const std::string& options = "") {
    const std::string u = url(options);
    if (u.rfind("sqlite:", 0) == 0) return auditpipe::sqlite::open(u);
    if (u.rfind("mysql:", 0) == 0) return auditpipe::mysql::open(u);
    return auditpipe::postgresql::open(u);
  }

 protected:
  static std::string join(const std::string& base, const std::string& options) {
    if (options.empty()) return base;
    return base + (base.find('?') == std::string::npos ? "?" : "&") + options;
  }
};

class SqliteBackend : public Backend {
 public:
  std::string url(const std::string& options) override {
    return join("sqlite://" + path_, options);
  }
  void drop_table() override { std::filesystem::remove(path_); }
  void exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  long long scalar(const std::string& sql) override {
    long long v = -1;
    query(sql, [&](sqlite3_stmt* st) { v = sqlite3_column_int64(st, 0); });
    return v;
  }
  std::optional<std::string> text(const std::string& column, long long id) override {
    std::optional<std::string> v;
    query("SELECT " + column + " FROM audit_log WHERE message_id = " + std::to_string(id),
          [&](sqlite3_stmt* st) {
            const auto* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
            v = std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(st, 0)));
          });
    return v;
  }
  std::optional<double> real(const std::string& column, long long id) override {
    std::optional<double> v;
    query("SELECT " + column + " FROM audit_log WHERE message_id = " + std::to_string(id),
          [&](sqlite3_stmt* st) { v = sqlite3_column_double(st, 0); });
    return v;
  }
  long long at_micros(long long id) override {
    return scalar("SELECT at FROM audit_log WHERE message_id = " + std::to_string(id));
  }

 private:
  template <class F>
  void query(const std::string& sql, F on_row) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    if (sqlite3_step(st) == SQLITE_ROW) on_row(st);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  testing_support::TempDir dir_;
  std::string path_ = dir_.file("audit.db");
};

class MysqlBackend : public Backend {
 public:
  explicit MysqlBackend(std::string path) : path_(std::move(path)) {}
  std::string url(const std::string& options) override {
    return join(testing_support::mysql_url_with("write_path=" + path_), options);
  }
  void drop_table() override {
    for (const char* t : {"audit_log", "audit_log_seals", "audit_log_unsealed"})
      probe_.exec(std::string("DROP TABLE IF EXISTS ") + t);
  }
  long long scalar(const std::string& sql) override { return probe_.scalar(sql); }
  void exec(const std::string& sql) override { probe_.exec(sql); }
  std::optional<std::string> text(const std::string& column, long long id) override {
    const auto r = probe_.rows("SELECT " + column +
                               " FROM audit_log WHERE message_id = " + std::to_string(id));
    if (r.empty()) return std::nullopt;
    return r[0][0];
  }
  long long at_micros(long long id) override {
    // DATETIME(6) holds the UTC calendar time the sink wrote.
    return probe_.scalar(
        "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', at) FROM audit_log "
        "WHERE message_id = " +
        std::to_string(id));
  }

 private:
  std::string path_;
  testing_support::MysqlProbe probe_;
};

class PostgresqlBackend : public Backend {
 public:
  explicit PostgresqlBackend(std::string path) : path_(std::move(path)) {}
  std::string url(const std::string& options) override {
    return join(join(testing_support::postgresql_test_url(), "write_path=" + path_), options);
  }
  void drop_table() override {
    for (const char* t : {"audit_log", "audit_log_seals", "audit_log_unsealed"})
      probe_.exec(std::string("DROP TABLE IF EXISTS ") + t);
  }
  long long scalar(const std::string& sql) override { return probe_.scalar(sql); }
  void exec(const std::string& sql) override { probe_.exec(sql); }
  std::optional<std::string> text(const std::string& column, long long id) override {
    const auto r = probe_.rows("SELECT " + column +
                               " FROM audit_log WHERE message_id = " + std::to_string(id));
    if (r.empty()) return std::nullopt;
    return r[0][0];
  }
  bool stores_nul() const override { return false; }
  long long at_micros(long long id) override {
    // From the stored binary value (microseconds since 2000): extract(epoch)
    // rounds near the ends of the range. The sum is numeric, then text,
    // since it can pass INT64_MAX only for values no timestamp holds.
    const auto r = probe_.rows(
        "SELECT ((('x' || encode(timestamptz_send(at), 'hex'))::bit(64)::bigint)::numeric + "
        "946684800000000)::text FROM audit_log WHERE message_id = " +
        std::to_string(id));
    return r.empty() || !r[0][0] ? -1 : std::stoll(*r[0][0]);
  }

 private:
  std::string path_;
  testing_support::PostgresqlProbe probe_;
};

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "sqlite") return std::make_unique<SqliteBackend>();
  if (name.rfind("mysql_", 0) == 0) return std::make_unique<MysqlBackend>(name.substr(6));
  return std::make_unique<PostgresqlBackend>(name.substr(11));  // "postgresql_"
}

long long scaled(long long full) {
  const char* rows = std::getenv("AUDITPIPE_TEST_ROWS");
  return rows ? std::max(1000LL, full * std::atoll(rows) / 1'000'000) : full;
}

// What a text column holds after the writer's repairs, for a backend.
std::string stored(const Backend& b, const std::string& text, std::size_t capacity) {
  std::string s = text.substr(0, auditpipe::utf8_prefix_length(text, capacity));
  if (b.stores_nul()) return s;
  const std::size_t n = s.size();
  s.resize(capacity);
  s.resize(auditpipe::replace_nul(s.data(), n, capacity));
  return s;
}

class SinkConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = make_backend(GetParam());
    backend_->drop_table();
  }
  std::unique_ptr<Backend> backend_;
};

const std::vector<std::string>& hostile_strings() {
  static const std::vector<std::string> v = {
      "it's a \"quoted\" string",
      "back\\slash \\' \\\" \\0 \\n \\\\ \\N",
      "'; DROP TABLE audit_log; --",
      "Robert'); DELETE FROM audit_log WHERE ('1'='1",
      "emoji \xF0\x9F\x98\x80 and \xE2\x82\xAC and \xC3\xA9",
      "nul\0inside\0"s,
      "\0"s,
      "tab\tnewline\ncr\r ctrl-z \x1a percent %s %d %% $1 ?",
      "",
      "\\.",  // COPY's end-of-data marker, on a line of its own in text format
  };
  return v;
}

TEST_P(SinkConformance, HostileTextRoundTripsByteExact) {
  {
    auditpipe::Logger<AuditRow> logger(backend_->open());
    for (std::size_t i = 0; i < hostile_strings().size(); ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = static_cast<std::int64_t>(i);
      r->sender = hostile_strings()[i];
      r->payload = hostile_strings()[i];
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.rejected_by_sink, 0u);
    EXPECT_EQ(report.stats.nul_replaced_fields, backend_->stores_nul() ? 0u : 4u);
  }
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"),
            static_cast<long long>(hostile_strings().size()));
  for (std::size_t i = 0; i < hostile_strings().size(); ++i) {
    const auto id = static_cast<long long>(i);
    EXPECT_EQ(backend_->text("sender", id), stored(*backend_, hostile_strings()[i], 32))
        << "string " << i;
    EXPECT_EQ(backend_->text("payload", id), stored(*backend_, hostile_strings()[i], 128))
        << "string " << i;
  }
}

TEST_P(SinkConformance, InvalidUtf8IsRepairedAndCounted) {
  {
    auditpipe::Logger<AuditRow> logger(backend_->open());
    auto r = logger.acquire();
    r->message_id = 1;
    r->sender = "ok \xC3\xA9";
    r->payload = "bad \xFF\xFE end \xE2\x82 cut";
    ASSERT_EQ(r.commit(), Status::ok);
    const auto report = logger.close();
    EXPECT_EQ(report.stats.invalid_utf8_fields, 1u);
    EXPECT_EQ(report.stats.written, 1u);
  }
  EXPECT_EQ(backend_->text("sender", 1), "ok \xC3\xA9");
  EXPECT_EQ(backend_->text("payload", 1), "bad \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD cut");
}

TEST_P(SinkConformance, OverlongTextIsCutAtACharacterBoundaryAndCounted) {
  {
    auditpipe::Logger<AuditRow> logger(backend_->open());
    auto r = logger.acquire();
    r->message_id = 1;
    r->sender = std::string(30, 'a') + "\xE2\x82\xAC\xE2\x82\xAC";  // 36 bytes into 32
    r->payload = std::string(500, 'p');
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_EQ(logger.close().stats.truncated_fields, 2u);
  }
  EXPECT_EQ(backend_->text("sender", 1), std::string(30, 'a'));
  EXPECT_EQ(backend_->text("payload", 1), std::string(128, 'p'));
}

// What a text field holds once the writer has finished it: cut to fit at a
// character boundary when assigned, invalid UTF-8 repaired, NULs replaced
// where the sink cannot store them.
std::string finished_text(const Backend& b, const std::string& text, std::size_t capacity) {
  std::string s(capacity, '\0');
  std::size_t n = auditpipe::utf8_prefix_length(text, capacity);
  std::copy_n(text.data(), n, s.data());
  if (!auditpipe::is_valid_utf8(std::string_view(s.data(), n))) {
    n = auditpipe::repair_utf8(s.data(), n, capacity);
  }
  if (!b.stores_nul()) n = auditpipe::replace_nul(s.data(), n, capacity);
  s.resize(n);
  return s;
}

// A record with a column of every type a record can have, in the table the
// backends read (audit_log, keyed by message_id).
struct EveryType {
  std::int64_t message_id = 0;
  auditpipe::timestamp at;
  std::int8_t i8 = 0;
  std::int16_t i16 = 0;
  std::int32_t i32 = 0;
  std::int64_t i64 = 0;
  std::uint8_t u8 = 0;
  std::uint16_t u16 = 0;
  std::uint32_t u32 = 0;
  bool flag = false;
  double amount = 0;
  auditpipe::fixed_string<32> sender;
  auditpipe::fixed_string<128> payload;
};
constexpr auto describe(auditpipe::type_tag<EveryType>) {
  return auditpipe::table<EveryType>(
      "audit_log", AUDITPIPE_COLUMN(EveryType, message_id), AUDITPIPE_COLUMN(EveryType, at),
      AUDITPIPE_COLUMN(EveryType, i8), AUDITPIPE_COLUMN(EveryType, i16),
      AUDITPIPE_COLUMN(EveryType, i32), AUDITPIPE_COLUMN(EveryType, i64),
      AUDITPIPE_COLUMN(EveryType, u8), AUDITPIPE_COLUMN(EveryType, u16),
      AUDITPIPE_COLUMN(EveryType, u32), AUDITPIPE_COLUMN(EveryType, flag),
      AUDITPIPE_COLUMN(EveryType, amount), AUDITPIPE_COLUMN(EveryType, sender),
      AUDITPIPE_COLUMN(EveryType, payload));
}

// Random records with edge values in every column of every type: each one
// must be stored exactly or refused and counted, on every sink and write
// path. Records whose values every database can hold (years 1000-9999,
// finite doubles) must all be stored.
TEST_P(SinkConformance, RandomRecordsRoundTripExactlyOrAreRefusedAndCounted) {
  std::mt19937_64 rng(20261201);
  auto pick = [&](const auto& values) { return values[rng() % std::size(values)]; };
  // An edge value of T half the time, any value of T otherwise.
  auto integer = [&]<class T>(T) {
    const T edges[] = {std::numeric_limits<T>::min(),
                       static_cast<T>(std::numeric_limits<T>::min() + 1),
                       T{0},
                       T{1},
                       static_cast<T>(std::numeric_limits<T>::max() - 1),
                       std::numeric_limits<T>::max()};
    return rng() % 2 ? pick(edges) : static_cast<T>(rng());
  };
  const std::int64_t edge_times[] = {INT64_MIN,
                                     INT64_MIN + 1,
                                     -(std::int64_t{1} << 62) - 1,
                                     -(std::int64_t{1} << 62),
                                     -210'866'803'200'000'000,
                                     -30'610'224'000'000'000,  // year 1000
                                     -1,
                                     0,
                                     1,
                                     253'402'300'799'999'999,  // the end of 9999
                                     253'402'300'800'000'000,
                                     INT64_MAX};
  const double edge_doubles[] = {0.0,
                                 -0.0,
                                 0.1,
                                 -1e308,
                                 std::numeric_limits<double>::max(),
                                 std::numeric_limits<double>::lowest(),
                                 std::numeric_limits<double>::min(),
                                 std::numeric_limits<double>::denorm_min(),
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN()};
  const std::string pieces[] = {
      "a",    "Z",    "'",    "\"",       "\\",       "\t",           "\n",
      "\r",   "\0"s,  "%",    ";",        "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
      "\xFF", "\xC0", "\x80", "\xE2\x82", "\\N",      "\\.",          " ",
      "--"};
  auto random_text = [&](std::size_t max_pieces) {
    std::string s;
    const std::size_t n = rng() % (max_pieces + 1);
    for (std::size_t i = 0; i < n; ++i) s += pick(pieces);
    return s;
  };
  struct Expected {
    EveryType row;
    std::string sender, payload;
    bool ordinary;  // every database can hold it
  };
  constexpr int count = 200;
  std::vector<Expected> expected;
  auditpipe::CloseReport report;
  {
    auditpipe::Options o;
    o.batch_size = 50;
    auditpipe::Logger<EveryType> logger(backend_->open(), o);
    for (int i = 0; i < count; ++i) {
      Expected e;
      EveryType& v = e.row;
      v.message_id = i;
      const bool ordinary_time = rng() % 2 == 0;
      v.at.micros = ordinary_time
                        ? static_cast<std::int64_t>(rng() % 230'000'000'000'000'000ULL) -
                              15'000'000'000'000'000
                        : (rng() % 2 ? pick(edge_times) : static_cast<std::int64_t>(rng()));
      v.i8 = integer(std::int8_t{});
      v.i16 = integer(std::int16_t{});
      v.i32 = integer(std::int32_t{});
      v.i64 = integer(std::int64_t{});
      v.u8 = integer(std::uint8_t{});
      v.u16 = integer(std::uint16_t{});
      v.u32 = integer(std::uint32_t{});
      v.flag = rng() % 2;
      v.amount = rng() % 3 == 0 ? pick(edge_doubles)
                                : std::ldexp(static_cast<double>(rng() >> 11) / 9.0e15,
                                             static_cast<int>(rng() % 200) - 100);
      e.sender = random_text(12);
      e.payload = random_text(60);
      const auto year = v.at.civil().year;
      e.ordinary = year >= 1000 && year <= 9999 && std::isfinite(v.amount);
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      *r = v;
      r->sender = e.sender;
      r->payload = e.payload;
      ASSERT_EQ(r.commit(), Status::ok);
      expected.push_back(e);
    }
    report = logger.close();
  }
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.written + report.stats.rejected_by_sink,
            static_cast<std::uint64_t>(count));
  std::uint64_t absent = 0;
  for (int i = 0; i < count; ++i) {
    const Expected& e = expected[static_cast<std::size_t>(i)];
    const EveryType& v = e.row;
    SCOPED_TRACE("record " + std::to_string(i));
    const std::string where = " FROM audit_log WHERE message_id = " + std::to_string(i);
    if (backend_->scalar("SELECT COUNT(*)" + where) == 0) {
      ++absent;
      EXPECT_FALSE(e.ordinary) << "at " << v.at.micros << ", amount " << v.amount
                               << ": values every database stores, refused";
      continue;
    }
    auto integer_of = [&](const std::string& column) {
      return backend_->scalar("SELECT " + column + where);
    };
    EXPECT_EQ(backend_->at_micros(i), v.at.micros);
    EXPECT_EQ(integer_of("i8"), v.i8);
    EXPECT_EQ(integer_of("i16"), v.i16);
    EXPECT_EQ(integer_of("i32"), v.i32);
    EXPECT_EQ(integer_of("i64"), v.i64);
    EXPECT_EQ(integer_of("u8"), v.u8);
    EXPECT_EQ(integer_of("u16"), v.u16);
    EXPECT_EQ(integer_of("u32"), v.u32);
    EXPECT_EQ(integer_of("CASE WHEN flag THEN 1 ELSE 0 END"), v.flag ? 1 : 0);
    const auto amount = backend_->real("amount", i);
    ASSERT_TRUE(amount.has_value());
    if (std::isnan(v.amount)) {
      EXPECT_TRUE(std::isnan(*amount));
    } else {
      EXPECT_EQ(*amount, v.amount);
    }
    EXPECT_EQ(backend_->text("sender", i), finished_text(*backend_, e.sender, 32));
    EXPECT_EQ(backend_->text("payload", i), finished_text(*backend_, e.payload, 128));
  }
  EXPECT_EQ(absent, report.stats.rejected_by_sink);
}

TEST_P(SinkConformance, ARetriedBatchIsNotWrittenTwice) {
  auto sink = backend_->open();
  const auto& d = auditpipe::descriptor_of<AuditRow>();
  sink->open(d, auditpipe::SinkContext{});
  std::vector<AuditRow> rows(200);
  std::vector<auditpipe::RecordRef> refs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].message_id = static_cast<std::int64_t>(i);
    rows[i].at = auditpipe::timestamp::now();
    refs.push_back({7, static_cast<std::int64_t>(i), reinterpret_cast<const std::byte*>(&rows[i])});
  }
  ASSERT_TRUE(sink->write({d, refs}).ok());
  ASSERT_TRUE(sink->write({d, refs}).ok());  // as after "connection lost" with the batch applied
  const auto overlap = sink->write({d, std::span(refs).subspan(100)});
  EXPECT_TRUE(overlap.ok()) << overlap.message;
  sink->close();
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), 200);
}

// Caller-given keys (DynamicLogger::Record::commit(source_id, seq)) may put
// one key twice into one batch, which the pipeline's own keys never do: the
// first is stored, the rest are skipped as duplicates, not refused.
TEST_P(SinkConformance, AKeyTwiceInOneBatchIsStoredOnceAsFirstGiven) {
  auto sink = backend_->open();
  const auto& d = auditpipe::descriptor_of<AuditRow>();
  sink->open(d, auditpipe::SinkContext{});
  std::vector<AuditRow> rows(100);
  std::vector<auditpipe::RecordRef> refs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].message_id = static_cast<std::int64_t>(i);
    rows[i].at = auditpipe::timestamp::now();
    refs.push_back(
        {7, static_cast<std::int64_t>(i % 40), reinterpret_cast<const std::byte*>(&rows[i])});
  }
  const auto result = sink->write({d, refs});
  EXPECT_TRUE(result.ok()) << result.message;
  sink->close();
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), 40);
  EXPECT_EQ(backend_->scalar("SELECT MAX(message_id) FROM audit_log"), 39);
}

// A key given again with other values (a caller's key: DynamicLogger's
// commit(source_id, seq); a load run again whose records carry the time of
// the run) is skipped by the insert, the row stored first kept. With
// seal=, the later batch's seal covers what the table holds at its keys,
// read back: the untouched table verifies clean. (Before, the seal held
// the values the batch carried, and verify reported the kept rows as
// changed: exit 1, tampering, on every database.)
TEST_P(SinkConformance, AKeyGivenAgainWithOtherValuesIsSealedAsStored) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  auto sink = backend_->open("seal=hash");
  const auto& d = auditpipe::descriptor_of<AuditRow>();
  sink->open(d, auditpipe::SinkContext{});
  std::vector<AuditRow> first(100), again(100);
  std::vector<auditpipe::RecordRef> first_refs, again_refs;
  for (std::size_t i = 0; i < 100; ++i) {
    first[i].message_id = static_cast<std::int64_t>(i);
    first[i].at = auditpipe::timestamp::now();
    first_refs.push_back(
        {7, static_cast<std::int64_t>(i), reinterpret_cast<const std::byte*>(&first[i])});
    // Keys 50 to 149: half of them stored already, with other values.
    again[i].message_id = static_cast<std::int64_t>(1000 + 50 + i);
    again[i].at = auditpipe::timestamp::now();
    again[i].payload = "given again";
    again_refs.push_back(
        {7, static_cast<std::int64_t>(50 + i), reinterpret_cast<const std::byte*>(&again[i])});
  }
  ASSERT_TRUE(sink->write({d, first_refs}).ok());
  const auto result = sink->write({d, again_refs});
  EXPECT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), 150);
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log WHERE message_id < 100"), 100)
      << "a row stored first was not kept";
  // (Seals are stored by the sink's own thread, shortly after their rows.)
  ASSERT_TRUE(testing_support::eventually(
      [&] { return backend_->scalar("SELECT COUNT(*) FROM audit_log_seals") >= 2; }));
  const auto v = testing_support::run_verify(backend_->url(), "audit_log");
  EXPECT_EQ(v.status, 0) << v.out;
  // A row put by someone else at a key the logger is about to use: the
  // batch that finds it there does not vouch for it (its seal covers the
  // batch's other keys), and verify names it.
  backend_->exec(
      "INSERT INTO audit_log (at, message_id, status, channel, latency_ms, delivered, sender, "
      "receiver, payload, source_id, seq) SELECT at, 9999, status, channel, latency_ms, "
      "delivered, sender, receiver, payload, source_id, 160 FROM audit_log WHERE source_id = 7 "
      "AND seq = 0");
  std::vector<AuditRow> next(20);
  std::vector<auditpipe::RecordRef> next_refs;
  for (std::size_t i = 0; i < next.size(); ++i) {
    next[i].message_id = static_cast<std::int64_t>(150 + i);
    next_refs.push_back(
        {7, static_cast<std::int64_t>(150 + i), reinterpret_cast<const std::byte*>(&next[i])});
  }
  const auto over_forged = sink->write({d, next_refs});
  EXPECT_TRUE(over_forged.ok()) << over_forged.message;
  sink->close();
  EXPECT_EQ(backend_->scalar("SELECT message_id FROM audit_log WHERE seq = 160"), 9999);
  const auto forged = testing_support::run_verify(backend_->url(), "audit_log");
  EXPECT_NE(forged.status, 0) << forged.out;
  EXPECT_NE(forged.out.find("seq 160"), std::string::npos) << forged.out;
}

TEST_P(SinkConformance, ManyProducersLandExactlyOnce) {
  const long long per_producer = scaled(25000);
  constexpr int producers = 8;
  {
    auditpipe::Options o;
    o.capacity = 8192;
    o.batch_size = 1000;
    o.writers = GetParam() == "sqlite" ? 1 : 2;
    o.max_wait = std::chrono::seconds(30);
    auditpipe::Logger<AuditRow> logger(backend_->open(), o);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (long long i = 0; i < per_producer; ++i) {
          auto r = logger.acquire();
          if (!r) {
            ++failures;
            continue;
          }
          r->message_id = p * per_producer + i;
          r->at = auditpipe::timestamp::now();
          r->payload = "payload";
          if (r.commit() != Status::ok) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    const auto report = logger.close(std::chrono::seconds(120));
    EXPECT_EQ(failures.load(), 0);
    EXPECT_TRUE(report.drained);
  }
  const long long total = producers * per_producer;
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), total);
  EXPECT_EQ(
      backend_->scalar("SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM audit_log) d"),
      total);
  EXPECT_EQ(backend_->scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), total);
  EXPECT_EQ(
      backend_->scalar("SELECT COUNT(*) FROM (SELECT source_id FROM audit_log GROUP BY source_id "
                       "HAVING MIN(seq) <> 0 OR MAX(seq) <> COUNT(*) - 1) g"),
      0);
}

// A fork() child has a logger's memory and none of its threads: its log()
// returned ok for records nobody would write, and its close() waited for
// writers that did not exist, for ever (a new user's pre-forking server).
// The child's logger now refuses records, closes and is destroyed at once,
// and leaves the parent's connections, whose sockets both hold, alone: the
// parent goes on writing without a failed write.
TEST_P(SinkConformance, AForkedChildsLoggerRefusesRecordsAndLeavesTheParentsAlone) {
  if (!testing_support::multithreaded_fork_testable)
    GTEST_SKIP() << testing_support::multithreaded_fork_skipped;
  auditpipe::Options o;
  o.capacity = 1024;
  o.batch_size = 100;
  auto logger = std::make_unique<auditpipe::Logger<AuditRow>>(backend_->open(), o);
  const auto log = [&](long long id) {
    auto r = logger->acquire();
    if (!r) return r.status();
    r->message_id = id;
    r->at = auditpipe::timestamp::now();
    r->payload = "before and after a fork";
    return r.commit();
  };
  for (long long id = 0; id < 500; ++id) ASSERT_EQ(log(id), Status::ok);
  ASSERT_TRUE(logger->flush(std::chrono::seconds(30)));

  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int failed = 0;
    for (long long id = 1000; id < 1100; ++id) {
      if (log(id) != Status::closed) failed |= 1;
    }
    const auto report = logger->close(std::chrono::seconds(1));
    if (!report.drained) failed |= 2;
    if (report.stats.health != auditpipe::Health::down ||
        report.stats.health_reason.find("fork()") == std::string::npos) {
      failed |= 4;
    }
    logger.reset();
    // SQLite: the parent's file is refused while the parent has it open
    // (SQLite's records of it came across the fork without its locks;
    // SqliteSink.AForkChildRefusesTheFileItsParentHadOpen has the rest).
    if (GetParam() == "sqlite") {
      try {
        auditpipe::Logger<AuditRow> own(backend_->open(), o);
        failed |= 8;
      } catch (const auditpipe::error& e) {
        if (std::string(e.what()).find("forked from") == std::string::npos) failed |= 8;
      }
      std::exit(failed);
    }
    try {
      // A logger of the child's own, on a sink of its own, works.
      auditpipe::Logger<AuditRow> own(backend_->open(), o);
      for (long long id = 2000; id < 2050; ++id) {
        auto r = own.acquire();
        if (!r) break;
        r->message_id = id;
        r->at = auditpipe::timestamp::now();
        if (r.commit() != Status::ok) failed |= 8;
      }
      if (!own.close(std::chrono::seconds(30)).drained) failed |= 8;
    } catch (const std::exception&) {
      failed |= 8;
    }
    // exit(), not _exit(): the thread's sources are let go of at exit,
    // which in the child must not touch the parent's pool.
    std::exit(failed);
  }
  // Before, the child never came back: it is given 60 s.
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && (done = waitpid(child, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child's close() or its logger's destruction did not return";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: a child's record not refused, 2: not drained, 4: health not down with why, "
         "8: the child's own logger failed";

  for (long long id = 500; id < 1000; ++id) ASSERT_EQ(log(id), Status::ok);
  const auto report = logger->close(std::chrono::seconds(60));
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.write_failures, 0u) << report.stats.health_reason;
  EXPECT_EQ(report.stats.written, 1000u);
  logger.reset();
  // The child's own 50 (none on SQLite, refused).
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"),
            GetParam() == "sqlite" ? 1000 : 1050);
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log WHERE message_id >= 1000 AND "
                             "message_id < 2000"),
            0);
}

// Options::source_id_base fixed per instance (docs/scale-out.md) without a
// durable pool: every start numbered its sources from seq 0 again, and the
// second start's records were skipped as repeats of the first's rows while
// its stats said written (a new user's restarts all lost). Such a start is
// refused; one that goes on with the first run's pool file is not.
TEST_P(SinkConformance, AFixedSourceIdBaseIsRefusedWhereItsNumberingWouldStartAgain) {
  testing_support::TempDir dir;
  auditpipe::Options o;
  o.source_id_base = std::int64_t{77} << 16;
  o.durable_path = dir.path() / "pool";
  const auto run = [&](const auditpipe::Options& options, long long first) {
    auditpipe::Logger<AuditRow> logger(backend_->open(), options);
    for (long long id = first; id < first + 10; ++id) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = id;
      r->at = auditpipe::timestamp::now();
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_TRUE(logger.close().drained);
  };
  run(o, 0);
  run(o, 10);  // the same pool file: its numbering goes on
  EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), 20);
  auditpipe::Options without_pool = o;
  without_pool.durable_path.clear();
  auditpipe::Options new_pool = o;
  new_pool.durable_path = dir.path() / "new_pool";
  for (const auditpipe::Options* refused : {&without_pool, &new_pool}) {
    try {
      auditpipe::Logger<AuditRow> logger(backend_->open(), *refused);
      FAIL() << "started with source ids whose rows are in the table, numbering from 0 again";
    } catch (const auditpipe::error& e) {
      EXPECT_NE(
          std::string(e.what()).find("holds rows of source " + std::to_string(*o.source_id_base)),
          std::string::npos)
          << e.what();
    }
  }
  without_pool.source_id_base.reset();  // a random base: starts
  run(without_pool, 20);
  EXPECT_EQ(backend_->scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), 30);
}

TEST_P(SinkConformance, AMissingTableIsAnErrorAtStartWhenCreationIsOff) {
  try {
    auditpipe::Logger<AuditRow> logger(backend_->open("create_table=false"));
    FAIL() << "expected an error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

// Names longer than the database keeps are refused at start, saying so.
// PostgreSQL cut a 64-byte column name to 63 silently: the first start
// made the table, and every later one failed its table check. MySQL
// refused a seals table's name past 64 bytes with its bare error.
TEST_P(SinkConformance, NamesTheDatabaseWouldCutOrRefuseAreRefusedAtStart) {
  const bool postgresql = GetParam().rfind("postgresql", 0) == 0;
  const auditpipe::Schema wide_column(
      "audit_log", {{.name = std::string(64, 'c'), .type = auditpipe::ColumnType::int64}});
  for (int start = 0; start < 2; ++start) {
    try {
      auditpipe::DynamicLogger logger(wide_column, backend_->open(""));
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      ASSERT_TRUE(r.set_integer(0, start));
      ASSERT_EQ(r.commit(), auditpipe::Status::ok);
      EXPECT_TRUE(logger.close().drained);
      EXPECT_FALSE(postgresql) << "a 64-byte column name was taken";
    } catch (const auditpipe::error& e) {
      EXPECT_TRUE(postgresql) << "start " << start << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("the column name '" + std::string(64, 'c') +
                                           "' is 64 bytes, and postgresql keeps names of at "
                                           "most 63 bytes"),
                std::string::npos)
          << e.what();
    }
  }
  if (!postgresql) {
    EXPECT_EQ(backend_->scalar("SELECT COUNT(*) FROM audit_log"), 2);
  }
  if (GetParam() == "sqlite") return;  // SQLite keeps names of any length
  // With seal=, the seals' tables are named after the table.
  const std::string table = "audit_log_" + std::string(postgresql ? 45 : 46, 'x');
  try {
    auditpipe::DynamicLogger logger(
        auditpipe::Schema(table, {{.name = "n", .type = auditpipe::ColumnType::int64}}),
        backend_->open("seal=hash"));
    FAIL() << "a " << table.size() << "-byte table name was taken with seal=";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("with seal=, the table of rows left unsealed's name '" +
                                         table + "_unsealed'"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Sinks, SinkConformance,
                         ::testing::Values("sqlite", "mysql_bulk", "mysql_text", "mysql_load_data",
                                           "postgresql_copy", "postgresql_insert"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
