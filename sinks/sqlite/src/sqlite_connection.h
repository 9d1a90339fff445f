// SqliteConnection: the SQLite sink's one connection, a SOCI session on
// the file (the catalog queries and DDL go through it) and the insert
// prepared on its sqlite3 handle, which writes bind to directly. Private
// to the sink; the skeleton holds it and lends it to one write at a time,
// and cancel_io() interrupts the statement running on it
// (sqlite3_interrupt, which SQLite allows from any thread).
#pragma once

#include <soci/soci.h>
// SOCI includes sqlite3.h inside its namespace sqlite_api: the C API is
// named from there (its functions are found by their arguments' namespace).
#include <soci/sqlite3/soci-sqlite3.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/sink/sql_sink.h"
#include "inherited_files.h"

namespace auditpipe::sqlite {

// What the sink and its Database take from a sqlite:// URL.
struct SqliteConfig {
  SqlSinkSettings sink;  // the URL (anything that looks like a password masked), create_table
  std::string path;
  std::string synchronous = "NORMAL";
  int busy_timeout_ms = 5000;
  // read_only=1: the file opened for reading alone, never created, never
  // switched to WAL (auditpipe verify; a Database that only reads). The
  // sink refuses it.
  bool read_only = false;
};

// Throws auditpipe::error naming the problem (anything that looks like a
// password masked).
SqliteConfig parse_sqlite_url(std::string_view url);

class SqliteConnection final : public SqlConnection {
 public:
  ~SqliteConnection() override {
    sqlite_api::sqlite3_finalize(insert);  // before the session closes its handle
    try {
      session.close();
    } catch (...) {
      // Closing cannot fail in a way the caller could act on.
    }
  }

  // Never asked: the sink keeps its one connection outside any pool.
  bool ping() noexcept override { return true; }
  // For the skeleton's table check (sqlite_connection.cpp).
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override;
  void execute_ddl(const std::string& sql) override;
  std::string server() const override { return path; }
  void cancel_io() noexcept override;
  // SQLite's own `?` parameters, bound as text (a STRICT table's column
  // converts them by its affinity); one statement at a time.
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params) override;

  // Declared before the session: it is forgotten after the session closed.
  OpenFileNote open_file;
  ::soci::session session;
  sqlite_api::sqlite3* handle = nullptr;  // the session's, set once it is open
  std::string path;                       // the file, for messages
  sqlite_api::sqlite3_stmt* insert = nullptr;

  // Whether `path` no longer names the file this connection has open (it
  // was removed, renamed or replaced since the open), as SQLite sees it
  // (SQLITE_FCNTL_HAS_MOVED: the path it resolved at open, the inode it
  // opened). The rows of a file removed under a logger went into it, to be
  // freed with it, and the logger said they were written.
  bool file_moved() const;

  // The busy timeout, kept by this connection's own busy handler
  // (wait_while_busy in the .cpp): SQLite's sleeps through an interrupt, so
  // a close() deadline was overrun by up to busy_timeout_ms while another
  // process held the file.
  std::chrono::milliseconds busy_timeout{0};
  std::chrono::steady_clock::time_point busy_since{};  // the statement's thread only
  std::atomic<bool> cancelled{false};                  // set by cancel_io(), for good
};

// Who serialises a connection's use: SQLite's own mutex, taken and released
// by every API call (any thread may use it at any time), or the caller,
// who never lets two threads use it at once (SQLite's "multi-thread" mode).
enum class Threading { sqlite_serializes, caller_serializes };

// The file opened as the sink writes it: the busy timeout, WAL, the
// synchronous level; a file this process may not write is refused. With
// read_only, an existing file opened read-only with the busy timeout alone.
// Throws auditpipe::error naming the file and what failed.
std::unique_ptr<SqliteConnection> open_connection(const SqliteConfig& config, Threading threading);

}  // namespace auditpipe::sqlite
