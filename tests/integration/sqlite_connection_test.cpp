// The SQLite sink's connection (sinks/sqlite/src/sqlite_connection.h), from
// inside: the sink's own is opened without SQLite's per-call mutex (the sink
// lends it to one write at a time) and keeps every setting open_connection
// applies; a Database's keeps the mutex; a read-only one (read_only=1)
// changes nothing in the file and creates none.
#include "sqlite_connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace {

using auditpipe::sqlite::open_connection;
using auditpipe::sqlite::SqliteConfig;
using auditpipe::sqlite::Threading;
using testing_support::TempDir;

std::string pragma(sqlite_api::sqlite3* db, const std::string& name) {
  sqlite_api::sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite_api::sqlite3_prepare_v2(db, ("PRAGMA " + name).c_str(), -1, &st, nullptr),
            SQLITE_OK);
  std::string value;
  if (sqlite_api::sqlite3_step(st) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite_api::sqlite3_column_text(st, 0));
  }
  sqlite_api::sqlite3_finalize(st);
  return value;
}

SqliteConfig config_for(const TempDir& dir) {
  SqliteConfig config;
  config.path = (dir.path() / "audit.db").string();
  config.busy_timeout_ms = 1234;
  config.synchronous = "FULL";
  return config;
}

TEST(SqliteConnection, TheSinksOwnHasNoMutexAndKeepsItsSettings) {
  TempDir dir;
  const auto c = open_connection(config_for(dir), Threading::caller_serializes);
  // sqlite3_db_mutex() is NULL exactly when the connection is not in
  // SQLite's serialized mode.
  EXPECT_EQ(sqlite_api::sqlite3_db_mutex(c->handle), nullptr);
  // The settings are on the handle the writes use, not on one replaced.
  EXPECT_EQ(c->busy_timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(pragma(c->handle, "journal_mode"), "wal");
  EXPECT_EQ(pragma(c->handle, "synchronous"), "2");  // FULL
  // The SOCI session works on that same handle: a table it creates is
  // seen through the handle.
  c->execute_ddl("CREATE TABLE t (x INTEGER)");
  EXPECT_EQ(pragma(c->handle, "table_info(t)").empty(), false);
}

TEST(SqliteConnection, ADatabasesKeepsSqlitesMutex) {
  TempDir dir;
  const auto c = open_connection(config_for(dir), Threading::sqlite_serializes);
  EXPECT_NE(sqlite_api::sqlite3_db_mutex(c->handle), nullptr);
  EXPECT_EQ(c->busy_timeout, std::chrono::milliseconds(1234));
}

TEST(SqliteConnection, AReadOnlyOneChangesNothing) {
  TempDir dir;
  SqliteConfig config = config_for(dir);
  {
    const auto writer = open_connection(config, Threading::caller_serializes);
    writer->execute_ddl("CREATE TABLE t (x INTEGER)");
    writer->execute_ddl("PRAGMA journal_mode=DELETE");
  }
  config.read_only = true;
  const auto c = open_connection(config, Threading::sqlite_serializes);
  EXPECT_EQ(sqlite_api::sqlite3_db_readonly(c->handle, "main"), 1);
  EXPECT_EQ(pragma(c->handle, "journal_mode"), "delete");  // not switched to WAL
  EXPECT_EQ(c->busy_timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(c->query_rows("SELECT COUNT(*) FROM t", {}).at(0).at(0).value_or(""), "0");
  EXPECT_THROW(c->execute_ddl("CREATE TABLE u (x INTEGER)"), std::exception);
}

TEST(SqliteConnection, AReadOnlyOneCreatesNoFile) {
  TempDir dir;
  SqliteConfig config = config_for(dir);
  config.read_only = true;
  try {
    (void)open_connection(config, Threading::sqlite_serializes);
    ADD_FAILURE() << "a missing file was opened";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no SQLite database '" + config.path + "'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(config.path));
}

// Another connection holding the file's write lock: a statement waits for
// it up to the busy timeout, and cancel_io() (close() out of time) ends the
// wait at once. SQLite's own busy timeout slept through sqlite3_interrupt:
// close(1 s) took 2 s, or 5 s with busy_timeout_ms=8000.
TEST(SqliteConnection, AWaitForALockEndsAtTheBusyTimeoutOrWhenCancelled) {
  using Clock = std::chrono::steady_clock;
  TempDir dir;
  SqliteConfig config = config_for(dir);  // busy_timeout_ms 1234
  const auto c = open_connection(config, Threading::caller_serializes);
  c->execute_ddl("CREATE TABLE t (x INTEGER)");
  sqlite_api::sqlite3* holder = nullptr;
  ASSERT_EQ(
      sqlite_api::sqlite3_open_v2(config.path.c_str(), &holder, SQLITE_OPEN_READWRITE, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite_api::sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr),
            SQLITE_OK);

  auto t0 = Clock::now();
  EXPECT_THROW(c->execute_ddl("INSERT INTO t VALUES (1)"), std::exception);
  const auto waited = Clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(1234));  // waited its turn
  EXPECT_LT(waited, std::chrono::milliseconds(1234 + 2000));

  config.busy_timeout_ms = 60000;
  const auto d = open_connection(config, Threading::caller_serializes);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    d->cancel_io();
  });
  t0 = Clock::now();
  EXPECT_THROW(d->execute_ddl("INSERT INTO t VALUES (2)"), std::exception);
  const auto cancelled_after = Clock::now() - t0;
  canceller.join();
  EXPECT_LT(cancelled_after, std::chrono::seconds(5))
      << "the wait for the lock outlived cancel_io()";

  sqlite_api::sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite_api::sqlite3_close(holder);
  c->execute_ddl("INSERT INTO t VALUES (3)");  // the lock is free: stored
  EXPECT_EQ(c->query_rows("SELECT COUNT(*) FROM t", {}).at(0).at(0).value_or(""), "1");
}

}  // namespace
