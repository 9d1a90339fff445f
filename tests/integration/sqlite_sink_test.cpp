// The SQLite sink on a real SQLite file: column types, paths, clear errors
// at open, refused records isolated. (Round trips of hostile text,
// idempotent retries and exactly-once delivery are in
// sink_conformance_test.cpp, shared by every sink.)
#include "auditpipe/sqlite/sqlite_sink.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <latch>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit_row.h"
#include "auditpipe/database.h"
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/logger.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/seal_read_back.h"
#include "captured_warnings.h"
#include "child_exit.h"
#include "collecting_sink.h"
#include "eventually.h"
#include "multithreaded_fork.h"
#include "temp_dir.h"
#include "verify_run.h"

namespace {

using namespace std::string_literals;
using auditpipe::Status;
using testing_support::AuditRow;
using testing_support::TempDir;

// A read-only view of the database through SQLite's own C API, so what the
// test sees does not depend on the code under test.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~Db() { sqlite3_close(db_); }

  long long scalar(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
    long long v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }

  // Column `col` of the row with message_id = id, as exact bytes.
  std::string text(const std::string& col, long long id) {
    sqlite3_stmt* st = nullptr;
    const std::string sql =
        "SELECT " + col + ", typeof(" + col + ") FROM audit_log WHERE message_id = ?";
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    std::string out = "<no row>";
    if (sqlite3_step(st) == SQLITE_ROW) {
      EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), "text");
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
      out.assign(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(st, 0)));
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

void exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// A find in audit_log_unsealed as a start writes it: its MAC (seal=hmac,
// `key`) over the table's name and the find, spelled out here as verify
// reads it.
void write_find(const std::string& path, long long source, long long after_no,
                const std::string& runs, const std::string& key) {
  const std::string message = "auditpipe-unsealed\naudit_log_unsealed\n" + std::to_string(source) +
                              '\n' + std::to_string(after_no) + '\n' + runs;
  exec(path, "INSERT INTO audit_log_unsealed (source_id, after_no, runs, mac) VALUES (" +
                 std::to_string(source) + ", " + std::to_string(after_no) + ", '" + runs + "', '" +
                 auditpipe::seal::seal_digest(auditpipe::seal::Mode::hmac, key, message) + "')");
}

std::string open_error(const std::string& url) {
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url));
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

// A new table whose creation another connection keeps locked out (a write
// transaction held open) is refused once busy_timeout_ms has passed, and
// the error says how long the lock was waited for, without a grant hint
// (a file has no users). (Seen once in CI, between two loads started at
// once: "database is locked", which did not say whether it had waited.)
TEST(SqliteSink, ATableCreationLockedOutSaysHowLongItWaited) {
  TempDir dir;
  const std::string path = dir.file("held.db");
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder,
                         "PRAGMA journal_mode=WAL; CREATE TABLE other (x INTEGER); "
                         "BEGIN IMMEDIATE; INSERT INTO other VALUES (1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(holder);
  const auto started = std::chrono::steady_clock::now();
  const std::string refused = open_error("sqlite://" + path + "?busy_timeout_ms=300");
  const auto waited = std::chrono::steady_clock::now() - started;
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_NE(refused.find("cannot create table audit_log"), std::string::npos) << refused;
  EXPECT_NE(refused.find("database is locked"), std::string::npos) << refused;
  EXPECT_NE(refused.find("held the database locked for"), std::string::npos) << refused;
  EXPECT_NE(refused.find("busy_timeout_ms=300)"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("grant"), std::string::npos) << refused;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  // And once the lock is gone, the same open creates the table.
  EXPECT_EQ(open_error("sqlite://" + path + "?busy_timeout_ms=300"), "");
}

TEST(SqliteSink, EveryColumnTypeRoundTrips) {
  TempDir dir;
  const std::string path = dir.file("types.db");
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path));
    auto r = logger.acquire();
    r->at = auditpipe::timestamp{1'700'000'000'123'456};
    r->message_id = -9'000'000'000'000'000'000;
    r->status = -2'147'483'647;
    r->channel = 65535;
    r->latency_ms = 0.1;
    r->delivered = true;
    ASSERT_EQ(r.commit(), Status::ok);
    logger.close();
  }
  Db db(path);
  EXPECT_EQ(db.scalar("SELECT at FROM audit_log"), 1'700'000'000'123'456);
  EXPECT_EQ(db.scalar("SELECT message_id FROM audit_log"), -9'000'000'000'000'000'000);
  EXPECT_EQ(db.scalar("SELECT status FROM audit_log"), -2'147'483'647);
  EXPECT_EQ(db.scalar("SELECT channel FROM audit_log"), 65535);
  EXPECT_EQ(db.scalar("SELECT latency_ms = 0.1 FROM audit_log"), 1);
  EXPECT_EQ(db.scalar("SELECT delivered FROM audit_log"), 1);
}

TEST(SqliteSink, PathsWithSpacesAndPercentEncoding) {
  TempDir dir;
  const std::string path = dir.file("with space.db");
  {
    auditpipe::Logger<AuditRow> logger(
        auditpipe::sqlite::open("sqlite://" + dir.path().string() + "/with%20space.db"));
    auto r = logger.acquire();
    ASSERT_EQ(r.commit(), Status::ok);
    logger.close();
  }
  Db db(path);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log"), 1);
}

// The path conventions (README, The SQLite sink): sqlite:///abs and
// SQLAlchemy's sqlite:////abs are both the absolute path, sqlite://rel is
// relative to the working directory, and sqlite:///name.db, where the two
// conventions disagree, is refused naming both spellings.
TEST(SqliteSink, AbsoluteRelativeAndAmbiguousPaths) {
  TempDir dir;
  const std::string abs = dir.file("four.db");
  ASSERT_EQ(abs.front(), '/');
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite:///" + abs));  // 4 slashes
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  EXPECT_TRUE(std::filesystem::exists(abs));
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://sub-relative.db"));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  std::filesystem::current_path(cwd);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "sub-relative.db"));
  const std::string e = open_error("sqlite:///audit.db");
  EXPECT_NE(e.find("ambiguous"), std::string::npos) << e;
  EXPECT_NE(e.find("sqlite://audit.db for the relative file"), std::string::npos) << e;
  EXPECT_NE(e.find("sqlite:////audit.db for /audit.db"), std::string::npos) << e;
}

TEST(SqliteSink, ClearErrorsAtOpen) {
  TempDir dir;
  EXPECT_NE(open_error("sqlite:///nonexistent-dir-for-auditpipe/x.db")
                .find("cannot open SQLite database"),
            std::string::npos);
  EXPECT_NE(open_error("postgres://x/y").find("malformed SQLite URL"), std::string::npos);
  EXPECT_NE(
      open_error("sqlite://" + dir.file("a.db") + "?colour=blue").find("unknown option 'colour'"),
      std::string::npos);
  EXPECT_NE(
      open_error("sqlite://" + dir.file("a.db") + "?synchronous=sometimes").find("synchronous"),
      std::string::npos);
  EXPECT_NE(open_error("sqlite://").find("no database file path"), std::string::npos);
  // create_table=false: a mistyped path is said so, and left without a
  // file (an empty one stayed there); a file without the table is said so,
  // without a hint at privileges, which a file has none of.
  EXPECT_NE(open_error("sqlite://" + dir.file("b.db") + "?create_table=false")
                .find("SQLite database '" + dir.file("b.db") +
                      "' does not exist (No such file or directory; create_table=false makes "
                      "neither the file nor the table)"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("b.db")));
  exec(dir.file("c.db"), "CREATE TABLE other (x INTEGER)");
  const std::string no_table = open_error("sqlite://" + dir.file("c.db") + "?create_table=false");
  EXPECT_NE(no_table.find("does not exist (and create_table=false)"), std::string::npos)
      << no_table;
  EXPECT_EQ(no_table.find("privilege"), std::string::npos) << no_table;
}

TEST(SqliteSink, AnExistingTableMustHaveTheColumnsAndTheUniqueKey) {
  TempDir dir;
  const std::string wrong_columns = dir.file("wrong.db");
  exec(wrong_columns,
       "CREATE TABLE audit_log (at INTEGER, message_id INTEGER, source_id INTEGER, seq INTEGER, "
       "UNIQUE(source_id, seq))");
  const std::string e1 = open_error("sqlite://" + wrong_columns);
  EXPECT_NE(e1.find("lacks the columns"), std::string::npos) << e1;
  EXPECT_NE(e1.find("payload"), std::string::npos) << e1;

  const std::string no_key = dir.file("nokey.db");
  exec(no_key,
       "CREATE TABLE audit_log (at INTEGER, message_id INTEGER, status INTEGER, channel INTEGER, "
       "latency_ms REAL, delivered INTEGER, sender TEXT, receiver TEXT, payload TEXT, "
       "source_id INTEGER, seq INTEGER)");
  const std::string e2 = open_error("sqlite://" + no_key);
  EXPECT_NE(e2.find("no unique key on (source_id, seq)"), std::string::npos) << e2;

  // With the key, an existing table is used as it is.
  exec(no_key, "CREATE UNIQUE INDEX audit_once ON audit_log (seq, source_id)");
  EXPECT_EQ(open_error("sqlite://" + no_key), "");
}

// A unique index on (source_id, seq) that ON CONFLICT (source_id, seq)
// cannot name is refused at start with its name and why (SQLite's own
// error at the insert's prepare named neither).
TEST(SqliteSink, AUniqueKeyOnTheKeyPairThatOnConflictCannotUseIsRefusedAtStart) {
  TempDir dir;
  int n = 0;
  for (const auto& [key, why] : std::vector<std::pair<std::string, std::string>>{
           {"CREATE UNIQUE INDEX audit_once ON audit_log (source_id, seq) WHERE status > 0",
            "is partial"},
           {"CREATE UNIQUE INDEX audit_once ON audit_log (source_id, seq, status + 1)",
            "is also over an expression"}}) {
    const std::string path = dir.file("key" + std::to_string(n++) + ".db");
    exec(path,
         "CREATE TABLE audit_log (at INTEGER, message_id INTEGER, status INTEGER, channel "
         "INTEGER, latency_ms REAL, delivered INTEGER, sender TEXT, receiver TEXT, payload TEXT, "
         "source_id INTEGER NOT NULL, seq INTEGER NOT NULL)");
    exec(path, key);
    const std::string e = open_error("sqlite://" + path);
    EXPECT_NE(e.find("has unique key audit_once on (source_id, seq), but it " + why),
              std::string::npos)
        << key << ": " << e;
  }
}

TEST(SqliteSink, AConstraintViolationRefusesOnlyTheBadRecord) {
  TempDir dir;
  const std::string path = dir.file("check.db");
  exec(
      path,
      "CREATE TABLE audit_log (at INTEGER, message_id INTEGER, status INTEGER CHECK (status >= 0), "
      "channel INTEGER, latency_ms REAL, delivered INTEGER, sender TEXT, receiver TEXT, "
      "payload TEXT, source_id INTEGER, seq INTEGER, UNIQUE (source_id, seq))");
  {
    auditpipe::Options o;
    o.flush_interval = std::chrono::seconds(60);
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path), o);
    for (int i = 0; i < 50; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      r->status = i == 17 ? -1 : 0;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.rejected_by_sink, 1u);
    EXPECT_EQ(report.stats.written, 49u);
  }
  Db db(path);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log"), 49);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log WHERE message_id = 17"), 0);
}

}  // namespace

// A time below -2^62 us carries the bits of an unconverted fast_now()
// reading; the writer must tell the two apart and store the application's
// value exactly, while real readings taken in the same batch become wall
// time.
TEST(SqliteSink, TimesBelowMinus2To62AreStoredExactlyNotTakenForTscReadings) {
  TempDir dir;
  const std::string path = dir.file("extreme_times.db");
  const std::int64_t extremes[] = {INT64_MIN,
                                   INT64_MIN + 1,
                                   -(std::int64_t{1} << 62) - 1,
                                   -(std::int64_t{1} << 62),
                                   INT64_MIN + 1'000'000,
                                   INT64_MAX,
                                   0};
  const std::int64_t before = auditpipe::timestamp::now().micros;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path));
    std::int64_t id = 0;
    for (std::int64_t micros : extremes) {
      auto r = logger.acquire();
      r->at = auditpipe::timestamp{micros};
      r->message_id = id++;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    auto r = logger.acquire();
    r->at = auditpipe::timestamp::fast_now();
    r->message_id = 100;
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  const std::int64_t after = auditpipe::timestamp::now().micros;
  Db db(path);
  std::int64_t id = 0;
  for (std::int64_t micros : extremes) {
    EXPECT_EQ(db.scalar("SELECT at FROM audit_log WHERE message_id = " + std::to_string(id++)),
              micros)
        << "record " << id - 1;
  }
  const std::int64_t now = db.scalar("SELECT at FROM audit_log WHERE message_id = 100");
  EXPECT_GE(now, before - 2'000'000);
  EXPECT_LE(now, after + 2'000'000);
}

// A null const char* in the caller's message used to crash log(); now the
// field is stored empty and counted.
TEST(SqliteSink, ANullCStringIsStoredEmptyAndCounted) {
  struct CMessage {
    std::int64_t id;
    const char* from;
  };
  constexpr auto m = auditpipe::mapping(auditpipe::field(&CMessage::id, &AuditRow::message_id),
                                        auditpipe::field(&CMessage::from, &AuditRow::sender));
  TempDir dir;
  const std::string path = dir.file("null_text.db");
  auditpipe::CloseReport report;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path));
    ASSERT_EQ(logger.log(CMessage{1, nullptr}, m), Status::ok);
    ASSERT_EQ(logger.log(CMessage{2, "alice"}, m), Status::ok);
    report = logger.close();
  }
  EXPECT_EQ(report.stats.written, 2u);
  EXPECT_EQ(report.stats.null_text_fields, 1u);
  Db db(path);
  EXPECT_EQ(db.scalar("SELECT length(sender) FROM audit_log WHERE message_id = 1"), 0);
  EXPECT_EQ(db.scalar("SELECT length(sender) FROM audit_log WHERE message_id = 2"), 5);
}

namespace {

// Loggers opened at once, from threads, on one new file all start and all
// write.
TEST(SqliteSink, LoggersOpenedAtOnceOnANewFileAllStart) {
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    const std::string path = dir.file("race.db");
    constexpr int loggers = 8;
    std::vector<std::string> errors(loggers);
    std::latch start(loggers);
    std::vector<std::thread> threads;
    for (int t = 0; t < loggers; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path));
          auto r = logger.acquire();
          r->message_id = t;
          if (r.commit() != Status::ok) errors[t] = "commit failed";
          if (!logger.close().drained) errors[t] = "not drained";
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < loggers; ++t) EXPECT_EQ(errors[t], "") << "round " << round;
    Db db(path);
    EXPECT_EQ(db.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), loggers);
  }
}

// open_error() in a child process that, when the test runs as root (whom
// file permissions do not stop), becomes the unprivileged user `nobody`.
std::string open_error_unprivileged(const std::string& url) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string e;
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      e = "cannot become nobody";
    } else {
      e = open_error(url);
    }
    if (e.empty()) e = "<opened>";
    if (write(fds[1], e.data(), e.size()) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return out;
}

// A file (or a directory) this process may not write is refused at
// construction, not retried at every batch.
TEST(SqliteSink, AFileThatCannotBeWrittenIsRefusedAtOpen) {
  TempDir dir;
  const std::string path = dir.file("ro.db");
  { auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path)); }
  chmod(dir.path().c_str(), 0755);
  chmod(path.c_str(), 0444);
  std::string e = open_error_unprivileged("sqlite://" + path);
  EXPECT_NE(e.find("read-only"), std::string::npos) << e;
  // A writable file in a directory where the WAL files cannot be made.
  chmod(path.c_str(), 0666);
  chmod(dir.path().c_str(), 0555);
  e = open_error_unprivileged("sqlite://" + path);
  EXPECT_NE(e.find("ro.db"), std::string::npos) << e;
  EXPECT_EQ(e.find("<opened>"), std::string::npos) << e;
  chmod(dir.path().c_str(), 0700);
}

// The file renamed away under a running logger (a cleanup script, a
// mistaken rotation): its rows went into the file it had open and were
// counted written; removed, they were freed with it. Now the writes wait,
// health down saying why, until the file is back under its name.
TEST(SqliteSink, AFileRenamedAwayUnderTheLoggerHoldsTheWritesUntilItIsBack) {
  TempDir dir;
  const std::string path = dir.file("moved.db");
  const std::string away = dir.file("away.db");
  auditpipe::Options o;
  o.retry_backoff_max = std::chrono::milliseconds(100);
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + path), o);
  const auto log = [&](int from, int n) {
    for (int i = from; i < from + n; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
  };
  log(0, 10);
  ASSERT_TRUE(logger.flush(std::chrono::seconds(30)));
  std::filesystem::rename(path, away);
  log(10, 10);
  const bool held = testing_support::eventually([&] {
    const auto s = logger.stats();
    return s.health == auditpipe::Health::down &&
           s.health_reason.find("was removed or renamed since the logger opened it") !=
               std::string::npos;
  });
  EXPECT_TRUE(held) << logger.stats().health_reason;
  EXPECT_EQ(logger.stats().written, 10u);
  std::filesystem::rename(away, path);
  EXPECT_TRUE(logger.flush(std::chrono::seconds(30)));
  EXPECT_TRUE(logger.close().drained);
  Db db(path);
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log"), 20);
}

// A relative path names the file in the working directory at open; a
// daemon that changes directory later still writes to it (the check above
// looks at the path made absolute at open).
TEST(SqliteSink, ARelativePathStillNamesItsFileAfterTheProcessChangesDirectory) {
  TempDir dir;
  const auto was = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://relative.db"));
  std::filesystem::current_path("/");
  for (int i = 0; i < 10; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  EXPECT_TRUE(logger.flush(std::chrono::seconds(10)));
  EXPECT_EQ(logger.stats().health, auditpipe::Health::ok) << logger.stats().health_reason;
  EXPECT_TRUE(logger.close().drained);
  std::filesystem::current_path(was);
  Db db(dir.file("relative.db"));
  EXPECT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log"), 10);
}

// An existing column whose affinity would convert the record's values is
// refused at open, naming table, column, found and accepted types.
TEST(SqliteSink, AnExistingColumnOfTheWrongTypeIsRefusedAtOpen) {
  TempDir dir;
  const std::string path = dir.file("types.db");
  auto table = [&](const std::string& status_type, const std::string& options) {
    exec(path, "DROP TABLE IF EXISTS audit_log");
    exec(path, "CREATE TABLE audit_log (at INTEGER, message_id INTEGER, status " + status_type +
                   ", channel INTEGER, latency_ms REAL, delivered INTEGER, sender TEXT, receiver "
                   "TEXT, payload TEXT, source_id INTEGER, seq INTEGER, UNIQUE (source_id, seq))" +
                   options);
  };
  table("TEXT", " STRICT");
  std::string e = open_error("sqlite://" + path);
  EXPECT_NE(e.find("audit_log"), std::string::npos) << e;
  EXPECT_NE(e.find("status is TEXT but the record's int32 needs integer, any"), std::string::npos)
      << e;
  table("REAL", "");
  e = open_error("sqlite://" + path);
  EXPECT_NE(e.find("status is REAL"), std::string::npos) << e;
  table("ANY", " STRICT");
  EXPECT_EQ(open_error("sqlite://" + path), "");
  table("BIGINT", "");
  EXPECT_EQ(open_error("sqlite://" + path), "");
}

}  // namespace

namespace {

// One logger on `url` writing `batches` batches of 10 records (one seal
// each), message_ids from `from` * 10, then closing.
void write_batches(const std::string& url, int from, int batches) {
  auditpipe::Options o;
  o.batch_size = 10;
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url), o);
  for (int batch = from; batch < from + batches; ++batch) {
    for (int i = 0; i < 10; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = batch * 10 + i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    ASSERT_TRUE(logger.flush(std::chrono::seconds(30)));
  }
  ASSERT_TRUE(logger.close().drained);
}

}  // namespace

// Several writers finish their batches out of order, so the seal just older
// than the newest 16 (what a start reads for a crashed run's unsealed
// tail) may hold a source's keys above the lowest seq among those 16. The
// start counts that seal's keys too: a clean restart warns of no sealed row
// as unsealed. (The order is made here by swapping two neighbouring seals'
// ranges, which the start reads and does not verify.)
TEST(SqliteSink, ARestartWarnsOfNoSealedRowsWhenSealsFinishedOutOfOrder) {
  TempDir dir;
  const std::string path = dir.file("seals.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  write_batches(url, 0, 24);
  // The seal at the edge of the newest 16 and the one before it.
  const long long seals = Db(path).scalar("SELECT COUNT(*) FROM audit_log_seals");
  ASSERT_GE(seals, 17);
  const long long edge = seals - 15, older = seals - 16;
  auto ranges_of = [&](long long no) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT ranges FROM audit_log_seals WHERE seal_no = ?", -1, &st,
                       nullptr);
    sqlite3_bind_int64(st, 1, no);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  };
  const std::string lower = ranges_of(older), higher = ranges_of(edge);
  ASSERT_FALSE(lower.empty());
  ASSERT_FALSE(higher.empty());
  exec(path, "UPDATE audit_log_seals SET ranges = '" + higher + "' WHERE seal_no = " +
                 std::to_string(older) + "; UPDATE audit_log_seals SET ranges = '" + lower +
                 "' WHERE seal_no = " + std::to_string(edge));

  testing_support::CapturedWarnings warnings;
  try {
    auditpipe::Logger<AuditRow>(auditpipe::sqlite::open(url)).close();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the restart failed: " << e.what();
  }
  EXPECT_EQ(warnings.text(), "") << "seals " << older << " and " << edge << ": " << higher
                                 << " and " << lower;
}

// The anchor file's directory removed while seals are stored: said with
// the cause (it read "Inappropriate ioctl for device", a stale errno) and
// not once per seal (ten lines a second), then said again when writes
// succeed; the seals themselves are stored all along.
TEST(SqliteSink, AFailingAnchorFileIsSaidOnceWithItsCause) {
  TempDir dir;
  const std::string path = dir.file("anchored.db");
  const std::filesystem::path anchors = dir.file("anchors");
  std::filesystem::create_directory(anchors);
  const std::string anchor = (anchors / "seal.anchor").string();
  const std::string url = "sqlite://" + path + "?seal=hash&seal_anchor_file=" + anchor;
  testing_support::CapturedWarnings warnings(spdlog::level::info);
  auditpipe::Options o;
  o.batch_size = 10;
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url), o);
  auto write = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
      if (i % 10 == 9) {
        ASSERT_TRUE(logger.flush(std::chrono::seconds(30)));
      }
    }
  };
  write(0, 20);
  ASSERT_TRUE(std::filesystem::exists(anchor));
  std::filesystem::remove_all(anchors);
  write(20, 100);  // seals stored, each failing to publish
  std::filesystem::create_directory(anchors);
  write(100, 110);
  ASSERT_TRUE(logger.close().drained);
  const std::string text = warnings.text();
  const std::string said =
      "cannot write seal anchor file " + anchor + ": No such file or directory";
  const std::size_t first = text.find(said);
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(said, first + 1), std::string::npos) << "said more than once: " << text;
  EXPECT_NE(text.find("seal anchor file " + anchor + " written again ("), std::string::npos)
      << text;
  EXPECT_EQ(Db(path).scalar("SELECT SUM(row_count) FROM audit_log_seals"), 110);
  std::ifstream in(anchor);
  long long no = 0;
  in >> no;
  EXPECT_EQ(no, Db(path).scalar("SELECT MAX(seal_no) FROM audit_log_seals"));
}

namespace {

// What a seal=hash table's seals hold, by seal_no.
struct StoredSeal {
  long long no;
  std::string ranges;
  long long row_count;
  long long sealed_at;
  std::string row_hashes;
  std::string digest;
};

std::vector<StoredSeal> stored_seals(auditpipe::Database& db, long long from) {
  std::vector<StoredSeal> out;
  for (const auto& r :
       db.query("SELECT seal_no, ranges, row_count, sealed_at, row_hashes, digest FROM "
                "audit_log_seals WHERE seal_no >= ? ORDER BY seal_no",
                {std::to_string(from)})) {
    out.push_back({std::stoll(r[0].value_or("0")), r[1].value_or(""),
                   std::stoll(r[2].value_or("0")), std::stoll(r[3].value_or("0")),
                   r[4].value_or(""), r[5].value_or("")});
  }
  return out;
}

// seal::RowsDigest of the rows `ranges` name, read back as verify reads them.
std::string rows_digest(auditpipe::Database& db, const std::string& ranges) {
  const std::optional<auditpipe::Schema> schema = db.read_schema("audit_log");
  const std::string select = auditpipe::seal::read_back_select(
      db.dialect(), schema->columns(), [&](std::string_view name) { return db.quote(name); });
  auditpipe::seal::RowsDigest digest;
  auditpipe::seal::RowEncoder enc;
  for (const auto& [sid, items] : auditpipe::seal::split_sources(ranges)) {
    for (const auto& run : auditpipe::seal::parse_runs(items)) {
      for (const auto& row :
           db.query("SELECT " + select +
                        " FROM audit_log WHERE source_id = ? AND seq "
                        "BETWEEN ? AND ? ORDER BY seq",
                    {std::to_string(sid), std::to_string(run.lo), std::to_string(run.hi)})) {
        enc.clear();
        for (std::size_t i = 0; i < schema->columns().size(); ++i) {
          auditpipe::seal::encode_read_back(
              enc, schema->columns()[i].type,
              row[i] ? std::optional<std::string_view>(*row[i]) : std::nullopt);
        }
        enc.key(sid, std::stoll(row.back().value_or("0")));
        digest.add(enc.bytes());
      }
    }
  }
  return digest.final_hex();
}

}  // namespace

// Seals of the v3 form (before seal=hmac's rows digest became Poly1305: a
// SHA-256 over the rows, message "auditpipe-seal-v3") still verify, and a
// row changed under them is still caught. The table's seals are rewritten
// here into what the earlier form made of the same rows.
TEST(SqliteSink, SealsOfTheEarlierV3FormStillVerify) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("v3.db");
  const std::string key_file = dir.file("seal.key");
  { std::ofstream(key_file) << "the v3 form's key"; }
  ::chmod(key_file.c_str(), 0600);
  const std::string url = "sqlite://" + path + "?seal=hmac&seal_key_file=" + key_file;
  write_batches(url, 0, 6);
  ASSERT_EQ(testing_support::run_verify(url, "audit_log").status, 0);
  {
    auto db = auditpipe::Database::connect("sqlite://" + path);
    std::string prev = auditpipe::seal::genesis_digest("audit_log");
    const std::vector<StoredSeal> seals = stored_seals(*db, 1);
    ASSERT_GE(seals.size(), 6u);
    for (const StoredSeal& s : seals) {
      const std::string digest = auditpipe::seal::seal_digest(
          auditpipe::seal::Mode::hmac, "the v3 form's key",
          auditpipe::seal::seal_message(prev, s.no, s.sealed_at, s.ranges, s.row_count,
                                        rows_digest(*db, s.ranges), 3));
      ASSERT_NE(digest, s.digest);
      db->execute("UPDATE audit_log_seals SET prev_digest = ?, digest = ? WHERE seal_no = ?",
                  {prev, digest, std::to_string(s.no)});
      prev = digest;
    }
  }
  const auto v3 = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v3.status, 0) << v3.out;
  exec(path, "UPDATE audit_log SET message_id = 999 WHERE message_id = 31");
  const auto changed = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(changed.status, 1) << changed.out;
  EXPECT_NE(changed.out.find("changed: source_id"), std::string::npos) << changed.out;
}

// Several writers finish their batches out of order, so a run killed
// between a batch's statement and its seal can leave that batch unsealed
// below rows another writer sealed. Left so, verify took those rows for
// inserted ones once more than --unsealed-window seals were stored above
// them. The next start seals them late instead: verify names that seal
// (exit 3) until it is accepted, and never reports the rows as inserted.
// (The crash is made here, with seal=hash, by removing one seal from the
// middle of the newest and re-chaining the two above it.)
// Records spilled while nothing could be stored, replayed into a sealed
// file by the next logger: on SQLite's one connection a replayed batch's
// keys are noted, its rows stored, its seal stored and the note removed in
// turn; the file verifies clean with no note left.
TEST(SqliteSink, SpilledRecordsReplayedIntoASealedFileVerifyCleanWithNoNoteLeft) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("replayed.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  auditpipe::Options o;
  o.capacity = 64;
  o.batch_size = 32;
  o.spill_path = dir.path() / "spill";
  o.overflow = auditpipe::Overflow::spill;
  constexpr int records = 500;
  // The tables first, and a count of the notes made.
  { auditpipe::Logger<AuditRow> create(auditpipe::sqlite::open(url)); }
  exec(path,
       "CREATE TABLE notes_made (n INTEGER); CREATE TRIGGER count_notes AFTER INSERT ON "
       "audit_log_unsealed BEGIN INSERT INTO notes_made VALUES (1); END");
  {
    auto down = std::make_shared<testing_support::CollectingSink>();
    down->hold();
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = 0; i < records; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), auditpipe::Status::ok);
    }
    down->fail_next(1'000'000);  // nothing reaches the test sink
    down->release();
    ASSERT_EQ(logger.close(std::chrono::milliseconds(10)).stats.spilled,
              static_cast<std::uint64_t>(records));
  }
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url), o);
    EXPECT_TRUE(logger.flush(std::chrono::seconds(60)));
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.replayed, static_cast<std::uint64_t>(records));
  }
  auto db = auditpipe::Database::connect("sqlite://" + path);
  EXPECT_EQ(db->query("SELECT COUNT(DISTINCT message_id) FROM audit_log")[0][0], "500");
  EXPECT_EQ(db->query("SELECT COUNT(*) FROM audit_log_unsealed")[0][0], "0");
  EXPECT_NE(db->query("SELECT COUNT(*) FROM notes_made")[0][0], "0") << "no note was made";
  const auto v = testing_support::run_verify(url, "audit_log", "--unsealed-window 0");
  EXPECT_EQ(v.status, 0) << v.out;
}

// Keys a caller gives (DynamicLogger's commit(source_id, seq)) may be any
// int64, the ends included. A seal's runs reach them: seqs from INT64_MIN
// and up to INT64_MAX, beside each other, seal and verify like any others,
// a start finds nothing unsealed among them, and a row deleted at either
// end is named. (Until the writer and verify stepped past a run's end
// without going through int64's edge, the runs ending there overflowed.)
TEST(SqliteSink, KeysAtTheEndsOfInt64SealAndVerify) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("ends.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  constexpr std::int64_t min = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::pair<std::int64_t, std::int64_t>> keys = {
      {5, min},     {5, min + 1}, {5, min + 2}, {5, -1},  {5, 0},     {5, 1},        {5, max - 2},
      {5, max - 1}, {5, max},     {min, min},   {min, 0}, {max, max}, {max, max - 1}};
  const auditpipe::Schema schema("audit_log", {{"message_id", auditpipe::ColumnType::int64}});
  const auto write = [&](std::size_t from, std::size_t to) {
    auditpipe::DynamicLogger logger(schema, auditpipe::sqlite::open(url));
    for (std::size_t i = from; i < to; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r.set_integer(0, static_cast<std::int64_t>(i));
      ASSERT_EQ(r.commit(keys[i].first, keys[i].second), Status::ok);
    }
    ASSERT_TRUE(logger.close().drained);
  };
  write(0, 7);  // two seals: this one's runs end where the next one's begin
  {
    testing_support::CapturedWarnings warnings;
    write(7, keys.size());
    EXPECT_EQ(warnings.text().find("unsealed"), std::string::npos) << warnings.text();
  }
  EXPECT_EQ(Db(path).scalar("SELECT COUNT(*) FROM audit_log"), static_cast<long long>(keys.size()));
  const auto clean = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(clean.status, 0) << clean.out;
  exec(path, "DELETE FROM audit_log WHERE source_id = 5 AND seq = " + std::to_string(min));
  const auto low = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(low.status, 1) << low.out;
  EXPECT_NE(low.out.find("source_id 5 seq " + std::to_string(min)), std::string::npos) << low.out;
  exec(path, "DELETE FROM audit_log WHERE source_id = 5 AND seq = " + std::to_string(max));
  const auto high = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(high.status, 1) << high.out;
  EXPECT_NE(high.out.find("source_id 5 seq " + std::to_string(max)), std::string::npos) << high.out;
}

// Numbers at BIGINT's ends edited into a seal: a newest seal_no at the
// top (numbering on from it would overflow) makes a start refuse the table,
// saying why; a negative row_count is a rewritten seal to verify (its
// count of the inserted rows overflowed, with a row of that seal deleted).
TEST(SqliteSink, ExtremeNumbersEditedIntoSealsAreReportedNotOverflowed) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("edited.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  write_batches(url, 0, 3);
  exec(path,
       "UPDATE audit_log_seals SET row_count = -9223372036854775807 - 1 WHERE seal_no = 1; "
       "DELETE FROM audit_log WHERE message_id = 0");
  const auto v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 1) << v.out;
  EXPECT_NE(v.out.find("rewritten seal: seal 1's row_count '-9223372036854775808'"),
            std::string::npos)
      << v.out;
  {
    // The newest seal renumbered, its digest made again to match (no key
    // to stop that with seal=hash), so that the start takes it as newest.
    auto db = auditpipe::Database::connect("sqlite://" + path);
    const long long newest =
        std::stoll(db->query("SELECT MAX(seal_no) FROM audit_log_seals")[0][0].value_or("0"));
    const StoredSeal s = stored_seals(*db, newest).at(0);
    const std::string prev = db->query("SELECT prev_digest FROM audit_log_seals WHERE seal_no = ?",
                                       {std::to_string(newest)})[0][0]
                                 .value_or("");
    constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
    const std::string digest = auditpipe::seal::seal_digest(
        auditpipe::seal::Mode::hash, {},
        auditpipe::seal::seal_message(prev, top, s.sealed_at, s.ranges, s.row_count,
                                      rows_digest(*db, s.ranges)));
    db->execute("UPDATE audit_log_seals SET seal_no = ?, digest = ? WHERE seal_no = ?",
                {std::to_string(top), digest, std::to_string(newest)});
  }
  const std::string refused = open_error(url);
  EXPECT_NE(refused.find("has seal_no '9223372036854775807', which auditpipe does not write"),
            std::string::npos)
      << refused;
}

// A row the statement counted as stored that is not in the table (a
// trigger that drops it: SQLite's RAISE(IGNORE)) is refused, not sealed:
// the seal holds only the rows that are there, and the table verifies
// clean. (Before, the seal named the dropped row's key and the record was
// counted written; verify then reported a row deleted.)
TEST(SqliteSink, ARowATriggerDropsIsRefusedNotSealed) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("dropping.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  { auditpipe::Logger<AuditRow> create(auditpipe::sqlite::open(url)); }
  exec(path,
       "CREATE TRIGGER drop_five BEFORE INSERT ON audit_log WHEN NEW.message_id = 5 BEGIN "
       "SELECT RAISE(IGNORE); END");
  auditpipe::Options o;
  o.batch_size = 10;
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url), o);
  for (int i = 0; i < 10; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.rejected_by_sink, 1u);
  EXPECT_EQ(report.stats.written, 9u);
  EXPECT_EQ(Db(path).scalar("SELECT COUNT(*) FROM audit_log"), 9);
  const auto v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 0) << v.out;
}

// Removes the seal `depth` below the newest (of a seal=hash table) and
// links those above it again: its rows stored, its seal never, as a run
// killed while the seal waited leaves them. What it covered, and its number.
struct RemovedSeal {
  std::string ranges;
  long long rows = 0;
  long long no = 0;
};

RemovedSeal remove_seal(const std::string& path, long long depth) {
  RemovedSeal out;
  auto db = auditpipe::Database::connect("sqlite://" + path);
  const long long newest =
      std::stoll(db->query("SELECT MAX(seal_no) FROM audit_log_seals")[0][0].value_or("0"));
  EXPECT_GT(newest, depth + 1);
  out.no = newest - depth;
  const std::vector<StoredSeal> above = stored_seals(*db, out.no);
  EXPECT_EQ(above.size(), static_cast<std::size_t>(depth + 1));
  out.ranges = above.at(0).ranges;
  out.rows = above.at(0).row_count;
  std::string prev = db->query("SELECT digest FROM audit_log_seals WHERE seal_no = ?",
                               {std::to_string(out.no - 1)})[0][0]
                         .value_or("");
  db->execute("DELETE FROM audit_log_seals WHERE seal_no >= ?", {std::to_string(out.no)});
  long long no = out.no;
  for (std::size_t i = 1; i < above.size(); ++i, ++no) {
    const StoredSeal& s = above[i];
    const std::string digest = auditpipe::seal::seal_digest(
        auditpipe::seal::Mode::hash, {},
        auditpipe::seal::seal_message(prev, no, s.sealed_at, s.ranges, s.row_count,
                                      rows_digest(*db, s.ranges)));
    db->execute(
        "INSERT INTO audit_log_seals (seal_no, ranges, row_count, prev_digest, digest, "
        "sealed_at, row_hashes) VALUES (?, ?, ?, ?, ?, ?, ?)",
        {std::to_string(no), s.ranges, std::to_string(s.row_count), prev, digest,
         std::to_string(s.sealed_at), s.row_hashes});
    prev = digest;
  }
  return out;
}

// The next start (a logger that writes one batch from batch `from` on)
// finds the rows of the seal remove_seal() took and seals them late, in one
// seal with the same ranges, which verify names (exit 3); no row reads as
// inserted.
void next_start_seals_late(const std::string& path, int from, const RemovedSeal& removed) {
  const std::string url = "sqlite://" + path + "?seal=hash";
  {
    testing_support::CapturedWarnings warnings;
    write_batches(url, from, 1);
    const std::string said = warnings.text();
    const std::string rows = std::to_string(removed.rows);
    EXPECT_NE(said.find(rows + " rows of source_id"), std::string::npos) << said;
    EXPECT_NE(said.find(rows + " rows found unsealed at start are sealed late"), std::string::npos)
        << said;
  }
  auto db = auditpipe::Database::connect("sqlite://" + path);
  const auto late =
      db->query("SELECT seal_no, ranges FROM audit_log_seals WHERE ranges LIKE 'late:%'");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0][1].value_or(""), std::string(auditpipe::seal::late_prefix) + removed.ranges);
  const auto v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 3) << v.out;
  EXPECT_NE(v.out.find("sealed late: seal " + late[0][0].value_or("") + " "), std::string::npos)
      << v.out;
  EXPECT_EQ(v.out.find("inserted"), std::string::npos) << v.out;
}

TEST(SqliteSink, ARestartSealsLateTheRowsAStoppedRunLeftUnsealedBelowSealedOnes) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("late.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  write_batches(url, 0, 24);
  const auto clean = testing_support::run_verify(url, "audit_log", "--unsealed-window 0");
  ASSERT_EQ(clean.status, 0) << clean.out;

  const RemovedSeal removed_seal = remove_seal(path, 2);
  const std::string unsealed_ranges = removed_seal.ranges;
  const long long unsealed_rows = removed_seal.rows;
  const long long removed = removed_seal.no;
  // What the crash leaves: those rows are not yet sealed, nothing tampered.
  const auto crashed = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(crashed.status, 3) << crashed.out;
  EXPECT_NE(crashed.out.find("not yet sealed"), std::string::npos) << crashed.out;

  {
    testing_support::CapturedWarnings warnings;
    // The next start: more seals than a start reads back (1024) before its
    // close seals them late, so that the late seal is far newer than the
    // seals around its rows.
    {
      auditpipe::Options o;
      o.batch_size = 10;
      auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(url), o);
      for (int i = 0; i < 11'000; ++i) {
        auto r = logger.acquire();
        ASSERT_TRUE(r);
        r->message_id = 240 + i;
        ASSERT_EQ(r.commit(), Status::ok);
      }
      ASSERT_TRUE(logger.close().drained);
    }
    const std::string said = warnings.text();
    EXPECT_NE(said.find(std::to_string(unsealed_rows) + " rows of source_id"), std::string::npos)
        << said;
    EXPECT_NE(
        said.find(std::to_string(unsealed_rows) + " rows found unsealed at start are sealed late"),
        std::string::npos)
        << said;
  }
  {
    // More seals above it than verify's window; a clean start seals nothing
    // late (a late seal does not set where its source's newest rows are:
    // its keys sit between those of seals a start no longer reads, and
    // those rows were taken for unsealed and sealed late again).
    testing_support::CapturedWarnings warnings;
    write_batches(url, 1500, 20);
    EXPECT_EQ(warnings.text(), "");
  }
  {
    auto db = auditpipe::Database::connect("sqlite://" + path);
    const auto late = db->query(
        "SELECT seal_no, ranges, row_count FROM audit_log_seals WHERE ranges LIKE 'late:%'");
    ASSERT_EQ(late.size(), 1u);
    EXPECT_EQ(late[0][1].value_or(""), std::string(auditpipe::seal::late_prefix) + unsealed_ranges);
    EXPECT_EQ(late[0][2].value_or(""), std::to_string(unsealed_rows));
    const std::string late_no = late[0][0].value_or("");
    // A seal of the restart's (its close's, unless its run outlasted the
    // grace), below the next start's 20.
    EXPECT_GE(std::stoll(late_no), removed + 2);
    EXPECT_GE(
        std::stoll(db->query("SELECT MAX(seal_no) FROM audit_log_seals")[0][0].value_or("0")) -
            std::stoll(late_no),
        20);

    auto v = testing_support::run_verify(url, "audit_log");
    EXPECT_EQ(v.status, 3) << v.out;
    EXPECT_NE(v.out.find("sealed late: seal " + late_no + " "), std::string::npos) << v.out;
    EXPECT_EQ(v.out.find("inserted"), std::string::npos) << v.out;
    v = testing_support::run_verify(url, "audit_log", "--accept-late " + late_no);
    EXPECT_EQ(v.status, 0) << v.out;
    EXPECT_NE(v.out.find("verified (1 late seals accepted"), std::string::npos) << v.out;

    // A row changed after its late seal is caught like any other.
    const auto first = auditpipe::seal::split_sources(unsealed_ranges).front();
    const auto run = auditpipe::seal::parse_runs(first.second).front();
    db->execute("UPDATE audit_log SET sender = 'mallory' WHERE source_id = ? AND seq = ?",
                {std::to_string(first.first), std::to_string(run.lo)});
    v = testing_support::run_verify(url, "audit_log", "--accept-late " + late_no);
    EXPECT_EQ(v.status, 1) << v.out;
    EXPECT_NE(v.out.find("seq " + std::to_string(run.lo) + " of seal " + late_no),
              std::string::npos)
        << v.out;
  }
}

// A writer kept from its batch (off its core, or in a slow statement)
// while the others store batch after batch of the same source stores it
// late; killed before its seal is stored, the run leaves those rows below
// more of the source's seals than the newest 16. The next start still
// finds them and seals them late. (Before, it counted from the lowest seq
// of the source's newest 16 seals only, and verify called the rows
// inserted: a double-crash test saw 7 rows so, below 28 sealed batches.)
TEST(SqliteSink, ARestartSealsLateABatchStoredLateBelowManyOfItsSourcesSeals) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("held.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  write_batches(url, 0, 80);  // one producer: one source, a seal per batch
  const RemovedSeal removed = remove_seal(path, 40);
  ASSERT_EQ(removed.rows, 10);
  // What the crash leaves: not yet sealed, nothing tampered.
  const auto crashed = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(crashed.status, 3) << crashed.out;
  EXPECT_NE(crashed.out.find("not yet sealed"), std::string::npos) << crashed.out;
  EXPECT_EQ(crashed.out.find("inserted"), std::string::npos) << crashed.out;
  next_start_seals_late(path, 100, removed);
}

// The start and verify draw the window's lower edge in one place: a
// batch left unsealed below d of its source's seals (one source, 10 keys a
// seal, so the window is the newest 256 seals) is "not yet sealed" to
// verify exactly when the next start finds it and seals it late, on each
// side of that edge. Rows just below the window's oldest seal are inside;
// below 257 seals and more, a crash's rows read as inserted (the README's
// limit) and the start leaves them. (Before, verify took a batch below 256
// seals for not yet sealed, and the start, which looked only from the
// window's oldest seal up, left it: then "inserted".)
TEST(SqliteSink, TheStartAndVerifyAgreeAtTheWindowsEdge) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string base = dir.file("base.db");
  write_batches("sqlite://" + base + "?seal=hash", 0, auditpipe::seal::tail_chain_seals + 20);
  for (const int depth : {255, 256, 257, 258}) {
    SCOPED_TRACE("the batch below " + std::to_string(depth) + " seals");
    const std::string path = dir.file("edge" + std::to_string(depth) + ".db");
    std::filesystem::copy_file(base, path);
    const std::string url = "sqlite://" + path + "?seal=hash";
    const RemovedSeal removed = remove_seal(path, depth);
    ASSERT_GT(removed.rows, 0);  // (a flush may have split a batch in two)
    const auto crashed = testing_support::run_verify(url, "audit_log");
    const bool unsealed = crashed.out.find("not yet sealed") != std::string::npos;
    const bool inserted = crashed.out.find("inserted") != std::string::npos;
    EXPECT_NE(unsealed, inserted) << crashed.out;
    EXPECT_EQ(crashed.status, unsealed ? 3 : 1) << crashed.out;
    EXPECT_EQ(unsealed, depth <= auditpipe::seal::tail_chain_seals) << crashed.out;
    write_batches(url, 10'000, 1);
    const long long late =
        Db(path).scalar("SELECT COUNT(*) FROM audit_log_seals WHERE ranges LIKE 'late:%'");
    EXPECT_EQ(late, unsealed ? 1 : 0) << "verify said:\n" << crashed.out;
    const auto after = testing_support::run_verify(url, "audit_log");
    EXPECT_EQ(after.status, unsealed ? 3 : 1) << after.out;
    EXPECT_EQ(after.out.find("inserted") != std::string::npos, !unsealed) << after.out;
  }
}

// A crashed run's batch left unsealed below 40 of its source's seals, and
// then 300 seals of another run stored above them all (a run killed within
// its start's grace, whose kept finds are gone): the batch is still "not
// yet sealed", and the next start finds it and seals it late. The window
// counts from the source's own newest seal. (Before, it counted from the
// chain's newest: verify called the rows inserted and the start left them;
// CI saw it under TSan in Fault.ASecondCrashWithinTheFirstRestartsGrace...)
TEST(SqliteSink, AnotherRunsSealsAboveACrashedRunsBatchDoNotTurnItInserted) {
  if (std::string(AUDITPIPE_CLI) == "false") GTEST_SKIP() << "built without the tool";
  TempDir dir;
  const std::string path = dir.file("buried.db");
  const std::string url = "sqlite://" + path + "?seal=hash";
  write_batches(url, 0, 80);
  constexpr int above = auditpipe::seal::tail_chain_seals + 44;
  write_batches(url, 1000, above);  // another logger: another run, its own source
  const RemovedSeal removed = remove_seal(path, above + 40);
  ASSERT_EQ(removed.rows, 10);
  const auto crashed = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(crashed.status, 3) << crashed.out;
  EXPECT_NE(crashed.out.find("not yet sealed: source_id"), std::string::npos) << crashed.out;
  EXPECT_EQ(crashed.out.find("inserted"), std::string::npos) << crashed.out;
  next_start_seals_late(path, 5000, removed);
}

// What a start found unsealed and kept in audit_log_unsealed (a start
// killed within its grace leaves it there) is sealed late by the next
// start, which would not find those rows by itself (their source belongs to
// no run among the seals). A find without this key's MAC (written by
// someone who can write the database, to have rows of their own sealed) is
// ignored, warned of, and left in place.
TEST(SqliteSink, ARestartSealsLateWhatAnEarlierStartKeptButNotAForgedFind) {
  TempDir dir;
  const std::string path = dir.file("kept.db");
  const std::string key = dir.file("seal.key");
  {
    std::ofstream k(key);
    k << "the kept finds' key";
  }
  std::filesystem::permissions(key, std::filesystem::perms::owner_read);
  const std::string url = "sqlite://" + path + "?seal=hmac&seal_key_file=" + key;
  write_batches(url, 0, 3);
  Db db(path);
  const long long sid = db.scalar("SELECT MIN(source_id) FROM audit_log");
  const long long newest = db.scalar("SELECT MAX(seal_no) FROM audit_log_seals");
  ASSERT_GE(db.scalar("SELECT COUNT(*) FROM audit_log WHERE source_id = " + std::to_string(sid) +
                      " AND seq < 10"),
            10);
  // Rows of two sources no seal mentions: kept's (a killed start's find),
  // and forged's.
  const long long kept = 1'000'001, forged = 2'000'001;
  for (const long long source : {kept, forged}) {
    exec(path,
         "INSERT INTO audit_log (at, message_id, status, channel, latency_ms, delivered, sender, "
         "receiver, payload, source_id, seq) SELECT at, message_id + " +
             std::to_string(source) +
             ", status, channel, latency_ms, delivered, sender, receiver, payload, " +
             std::to_string(source) +
             ", seq FROM audit_log WHERE source_id = " + std::to_string(sid) + " AND seq < 10");
  }
  write_find(path, kept, newest, "0-9", "the kept finds' key");
  write_find(path, forged, newest, "0-9", "another key");
  exec(path, "INSERT INTO audit_log_unsealed (source_id, after_no, runs, mac) VALUES (" +
                 std::to_string(forged) + ", 0, '0-9', 'no mac')");

  // verify names the kept find as pending (not tampering) and the forged
  // ones as tampering, before the start and after it.
  const std::string forged_line =
      "forged find: audit_log_unsealed: source_id " + std::to_string(forged) + " seq 0-9";
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  const std::string verify_url = "sqlite://" + path;
  const std::string with_key = "--key-file " + key;
  auto v = testing_support::run_verify(verify_url, "audit_log", with_key);
  EXPECT_EQ(v.status, 1) << v.out;
  EXPECT_NE(v.out.find("kept by a writer: audit_log_unsealed: source_id " + std::to_string(kept) +
                       " seq 0-9 (after seal " + std::to_string(newest) + ")"),
            std::string::npos)
      << v.out;
  EXPECT_EQ(count(v.out, forged_line), 2u) << v.out;
  EXPECT_EQ(count(v.out, "forged find"), 2u) << v.out;

  testing_support::CapturedWarnings warnings;
  auditpipe::Logger<AuditRow>(auditpipe::sqlite::open(url)).close();
  const std::string said = warnings.text();
  EXPECT_NE(said.find("2 of the finds in audit_log_unsealed do not carry this key's MAC"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("10 rows of source_id " + std::to_string(kept) +
                      " from seq 0 on were noted covered by no seal"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("source_id " + std::to_string(forged)), std::string::npos) << said;
  Db after(path);
  EXPECT_EQ(after.scalar("SELECT COUNT(*) FROM audit_log_seals WHERE ranges = 'late:" +
                         std::to_string(kept) + ":0-9'"),
            1);
  EXPECT_EQ(after.scalar("SELECT COUNT(*) FROM audit_log_seals WHERE ranges LIKE 'late:%'"), 1);
  // The kept find is gone with its late seal; the forged ones stay, evidence.
  EXPECT_EQ(after.scalar("SELECT COUNT(*) FROM audit_log_unsealed WHERE source_id = " +
                         std::to_string(kept)),
            0);
  EXPECT_EQ(after.scalar("SELECT COUNT(*) FROM audit_log_unsealed WHERE source_id = " +
                         std::to_string(forged)),
            2);
  v = testing_support::run_verify(verify_url, "audit_log", with_key);
  EXPECT_EQ(v.status, 1) << v.out;
  EXPECT_EQ(count(v.out, forged_line), 2u) << v.out;
  EXPECT_EQ(v.out.find("kept by a writer"), std::string::npos) << v.out;
  // Without the forged finds (and their rows), what is left is the late seal.
  exec(path, "DELETE FROM audit_log_unsealed");
  exec(path, "DELETE FROM audit_log WHERE source_id = " + std::to_string(forged));
  v = testing_support::run_verify(verify_url, "audit_log", with_key);
  EXPECT_EQ(v.status, 3) << v.out;
  EXPECT_EQ(v.out.find("forged find"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("sealed late: seal"), std::string::npos) << v.out;
}

// A find of negative seqs (caller keys may be any BIGINT) is named as
// verify names other spans: "-9 to -5", not the stored "-9--5".
TEST(SqliteSink, VerifyNamesAKeptFindOfNegativeSeqsReadably) {
  TempDir dir;
  const std::string path = dir.file("negative_find.db");
  const std::string key = dir.file("seal.key");
  {
    std::ofstream k(key);
    k << "the negative finds' key";
  }
  std::filesystem::permissions(key, std::filesystem::perms::owner_read);
  write_batches("sqlite://" + path + "?seal=hmac&seal_key_file=" + key, 0, 1);
  const long long newest = Db(path).scalar("SELECT MAX(seal_no) FROM audit_log_seals");
  write_find(path, 3000001, newest, "-9--5,-2-3", "the negative finds' key");
  const auto v = testing_support::run_verify("sqlite://" + path, "audit_log", "--key-file " + key);
  EXPECT_NE(v.out.find("kept by a writer: audit_log_unsealed: source_id 3000001 seq -9 to -5,"
                       "-2 to 3 (after seal " +
                       std::to_string(newest) + ")"),
            std::string::npos)
      << v.out;
  EXPECT_EQ(v.out.find("forged find"), std::string::npos) << v.out;
}

// A find whose rows have all been sealed since (its writer's seal stored
// after the find; a spill replay killed in close(), run again) keeps
// nothing unsealed: verify said "kept by a writer" (exit 3) until a start
// removed it, for a table whose every row verifies.
TEST(SqliteSink, AFindWhoseRowsAreAllSealedSinceIsNotPending) {
  TempDir dir;
  const std::string path = dir.file("settled_find.db");
  const std::string key = dir.file("seal.key");
  {
    std::ofstream k(key);
    k << "the settled finds' key";
  }
  std::filesystem::permissions(key, std::filesystem::perms::owner_read);
  write_batches("sqlite://" + path + "?seal=hmac&seal_key_file=" + key, 0, 3);
  Db db(path);
  const long long sid = db.scalar("SELECT MIN(source_id) FROM audit_log");
  ASSERT_EQ(db.scalar("SELECT COUNT(*) FROM audit_log WHERE source_id = " + std::to_string(sid)),
            30);
  const auto add_find = [&](const std::string& runs) {
    write_find(path, sid, 1, runs, "the settled finds' key");
  };
  // Keys 5-24 span the three batches' seals.
  add_find("5-24");
  const std::string verify_url = "sqlite://" + path;
  auto v = testing_support::run_verify(verify_url, "audit_log", "--key-file " + key);
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_EQ(v.out.find("kept by a writer"), std::string::npos) << v.out;
  // A run over keys with no row (a refused record's, a sparse source's)
  // whose rows are all sealed: settled too.
  add_find("28-35");
  v = testing_support::run_verify(verify_url, "audit_log", "--key-file " + key);
  EXPECT_EQ(v.status, 0) << v.out;
  // One row beyond the seals: still pending, and named.
  exec(path,
       "INSERT INTO audit_log (at, message_id, status, channel, latency_ms, delivered, sender, "
       "receiver, payload, source_id, seq) SELECT at, message_id, status, channel, latency_ms, "
       "delivered, sender, receiver, payload, source_id, 40 FROM audit_log WHERE source_id = " +
           std::to_string(sid) + " AND seq = 29");
  add_find("29-40");
  v = testing_support::run_verify(verify_url, "audit_log", "--key-file " + key);
  EXPECT_EQ(v.status, 3) << v.out;
  EXPECT_NE(v.out.find("kept by a writer: audit_log_unsealed: source_id " + std::to_string(sid) +
                       " seq 29-40"),
            std::string::npos)
      << v.out;
  EXPECT_EQ(v.out.find("seq 5-24"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("seq 28-35"), std::string::npos) << v.out;
}

// A pre-forking server whose parent made its SQLite logger before forking,
// each worker then making its own on the same file (README, fork()): the
// workers' connections took SQLite's per-process records of the file,
// inherited from the parent, for their own, and wrote without its locks (a
// trial: 7,064 of 10,000 rows lost, every process reporting all written).
// A child now refuses a file its parent had open at the fork, saying so;
// another file, or the same one once the parent closed it before forking,
// is its own.
TEST(SqliteSink, AForkChildRefusesTheFileItsParentHadOpen) {
  if (!testing_support::multithreaded_fork_testable)
    GTEST_SKIP() << testing_support::multithreaded_fork_skipped;
  testing_support::TempDir dir;
  const std::string shared = "sqlite://" + dir.file("shared.db");
  const std::string own_file = "sqlite://" + dir.file("own.db");
  // Exit status: 0 as expected; 1 the shared file was opened; 2 refused
  // without saying why; 3 the own file failed.
  auto child_of = [&](bool expect_refused) {
    const pid_t child = fork();
    if (child == 0) {
      int status = 0;
      try {
        auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(shared));
        auto r = logger.acquire();
        if (r) {
          r->message_id = 7;
          (void)r.commit();
        }
        const bool written = logger.close(std::chrono::seconds(10)).stats.written == 1;
        status = expect_refused ? 1 : (written ? 0 : 3);
      } catch (const auditpipe::error& e) {
        const std::string what = e.what();
        status = !expect_refused ? 3
                 : what.find("forked from") != std::string::npos &&
                         what.find("after forking") != std::string::npos
                     ? 0
                     : 2;
      }
      if (status == 0 && expect_refused) {
        try {
          auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open(own_file));
          auto r = logger.acquire();
          if (r) {
            r->message_id = 8;
            (void)r.commit();
          }
          if (logger.close(std::chrono::seconds(10)).stats.written != 1) status = 3;
        } catch (const std::exception&) {
          status = 3;
        }
      }
      _exit(status);
    }
    return testing_support::exit_status_within(child, 60);  // a hung child: -1, killed
  };
  {
    auditpipe::Logger<AuditRow> parent(auditpipe::sqlite::open(shared));
    for (int i = 0; i < 100; ++i) {
      auto r = parent.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    ASSERT_TRUE(parent.flush(std::chrono::seconds(10)));
    EXPECT_EQ(child_of(true), 0) << "(1: the child opened the file its parent had open)";
    EXPECT_TRUE(parent.close().drained);
  }
  EXPECT_EQ(Db(dir.file("shared.db")).scalar("SELECT COUNT(*) FROM audit_log"), 100);
  EXPECT_EQ(Db(dir.file("own.db")).scalar("SELECT COUNT(*) FROM audit_log"), 1);
  // The parent's logger gone before the fork: the file is the child's too.
  EXPECT_EQ(child_of(false), 0);
  EXPECT_EQ(Db(dir.file("shared.db")).scalar("SELECT COUNT(*) FROM audit_log"), 101);
}

// A child forked while the parent's SQLite logger writes makes a logger of
// its own (README, fork()). A writer thread could hold one of SQLite's
// global mutexes (its allocator's) at the fork, and the child then waited
// for it for ever in its first sqlite3_malloc: a trial saw 3 to 5 of 20
// children hang. The forking thread now holds them across fork().
TEST(SqliteSink, ChildrenForkedWhileTheParentWritesOpenTheirOwnLoggers) {
  if (!testing_support::multithreaded_fork_testable)
    GTEST_SKIP() << testing_support::multithreaded_fork_skipped;
  testing_support::TempDir dir;
  auditpipe::Options o;
  o.capacity = 4096;
  o.batch_size = 20;  // many small transactions: the writer is inside SQLite most of the time
  auditpipe::Logger<AuditRow> parent(auditpipe::sqlite::open("sqlite://" + dir.file("parent.db")),
                                     o);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (long long id = 0; !done.load(); ++id) {
      auto r = parent.acquire();
      if (!r) continue;
      r->message_id = id;
      r->payload = "the parent writes while it forks";
      (void)r.commit();
    }
  });
  constexpr int children = 20;
  int hung = 0, failed = 0;
  for (int k = 0; k < children; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    const pid_t child = fork();
    ASSERT_NE(child, -1);
    if (child == 0) {
      int status = 1;
      try {
        auditpipe::Logger<AuditRow> own(
            auditpipe::sqlite::open("sqlite://" + dir.file("child" + std::to_string(k) + ".db")));
        for (int i = 0; i < 10; ++i) {
          auto r = own.acquire();
          if (!r) break;
          r->message_id = i;
          (void)r.commit();
        }
        status = own.close(std::chrono::seconds(10)).stats.written == 10 ? 0 : 2;
      } catch (const std::exception&) {
        status = 3;
      }
      _exit(status);
    }
    const int status = testing_support::exit_status_within(child, 15);
    if (status == -1) {
      ++hung;
    } else if (status != 0) {
      ++failed;
    }
  }
  done.store(true);
  producer.join();
  EXPECT_EQ(hung, 0) << "children that never finished (of " << children << ")";
  EXPECT_EQ(failed, 0) << "children whose own logger failed";
  EXPECT_TRUE(parent.close().drained);
}
