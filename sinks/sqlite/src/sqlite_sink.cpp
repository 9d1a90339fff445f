// The SQLite sink on the SQL sink skeleton: one connection (a SOCI
// session with WAL, the busy timeout and the synchronous level set once),
// one transaction per batch with a prepared insert whose parameters are
// bound straight from the records through SQLite's C API (SOCI's vector
// binding copied every text into a std::string first and took ~7% of the
// writer's time: perf of bench/sink_ceiling), and SQLite's result codes
// sorted for the skeleton. A file is
// never unreachable: every open() failure is a configuration error, and so
// is a file removed or renamed under the logger.
#include "auditpipe/sqlite/sqlite_sink.h"

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "auditpipe/sink/sql_sink.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "sqlite_connection.h"
#include "sqlite_dialect.h"

namespace auditpipe::sqlite {

namespace {

// What the skeleton does about a SQLite result code: the data itself is
// rejected; a file this process may no longer write (its permissions or
// mount changed after open, or an authorizer refuses) is a configuration
// failure, retried slowly with health down until someone fixes it;
// anything else (the database is busy, the disk is full) is retried.
bool is_configuration_error(int code) {
  switch (code & 0xFF) {
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return true;
    default:
      return false;
  }
}

bool is_data_error(int code) {
  switch (code & 0xFF) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

class SqliteSink final : public SqlSink {
 public:
  explicit SqliteSink(SqliteConfig config)
      : SqlSink(sqlite_dialect, config.sink), config_(std::move(config)) {}
  ~SqliteSink() override { close(); }
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

 private:
  // The skeleton lends its one connection to one write at a time, and the
  // writes make about fourteen calls per row, each of which would otherwise
  // take and release the connection's mutex (README, The SQLite sink).
  std::unique_ptr<SqlConnection> connect() override {
    return open_connection(config_, Threading::caller_serializes);
  }

  void prepare_writes(SqlConnection& connection) override {
    auto& c = static_cast<SqliteConnection&>(connection);
    const std::string sql = table_text().single_row_insert();
    if (sqlite3_prepare_v3(c.handle, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &c.insert, nullptr) != SQLITE_OK) {
      throw error("auditpipe: cannot prepare the insert into SQLite database '" + c.path +
                  "': " + sqlite3_errmsg(c.handle));
    }
  }

  std::optional<WriteFailure> write_batch(SqlConnection& connection, const Batch& batch) override {
    auto& c = static_cast<SqliteConnection&>(connection);
    // A stat() per batch (SQLite's): a file removed under the logger took
    // every row written after with it, and the logger said they were
    // written. Until the file is back (or the logger starts again, on the
    // file the path names then), health is down and the records wait.
    if (c.file_moved()) {
      return WriteFailure{WriteFailure::Kind::configuration,
                          "SQLite database '" + c.path +
                              "' was removed or renamed since the logger opened it: rows "
                              "written now would go to a file no one can open by that name. Put "
                              "it back, or close the logger and start it again (it then opens "
                              "the file the path names)"};
    }
    int rc = sqlite3_exec(c.handle, "BEGIN", nullptr, nullptr, nullptr);
    const Column* nan_column = nullptr;
    if (rc == SQLITE_OK) rc = insert_all(c, batch, &nan_column);
    if (rc == nan_into_nullable) {
      sqlite3_reset(c.insert);
      sqlite3_exec(c.handle, "ROLLBACK", nullptr, nullptr, nullptr);
      return WriteFailure{WriteFailure::Kind::data, "a NaN in nullable column " +
                                                        std::string(nan_column->name) +
                                                        ", which SQLite would store as NULL"};
    }
    if (rc == SQLITE_OK) rc = sqlite3_exec(c.handle, "COMMIT", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return std::nullopt;
    // Read before anything else runs on the handle.
    const int code = sqlite3_extended_errcode(c.handle);
    std::string message = "SQLite error " + std::to_string(code) + ": " + sqlite3_errmsg(c.handle);
    sqlite3_reset(c.insert);
    if (sqlite3_get_autocommit(c.handle) == 0) {
      sqlite3_exec(c.handle, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    // SQLITE_INTERRUPT (cancel()) is `other`: retried, as the Sink
    // contract wants of a cancelled write.
    const WriteFailure::Kind kind = is_data_error(code) ? WriteFailure::Kind::data
                                    : is_configuration_error(code)
                                        ? WriteFailure::Kind::configuration
                                        : WriteFailure::Kind::other;
    return WriteFailure{kind, std::move(message)};
  }

  static void prefetch_record(const std::byte* p, std::size_t size) noexcept {
    for (std::size_t off = 0; off < size; off += 64) __builtin_prefetch(p + off, 0, 3);
  }

  // insert_all()'s answer for a NaN bound into a nullable column: SQLite
  // binds a NaN as NULL, which a NOT NULL column refuses but a nullable one
  // would store, making a value indistinguishable from a missing one.
  static constexpr int nan_into_nullable = -1;

  // Every record through the prepared insert; the text is bound where it
  // lies in the record (SQLITE_STATIC: it stays put until the write ends).
  // The first failing bind or step ends it, its code returned.

  static int insert_all(SqliteConnection& c, const Batch& batch, const Column** nan_column) {
    sqlite_api::sqlite3_stmt* st = c.insert;
    const auto& columns = batch.table.columns;
    const int key = static_cast<int>(columns.size()) + 1;
    const std::size_t n = batch.records.size();
    for (std::size_t k = 0; k < n; ++k) {
      const RecordRef& r = batch.records[k];
      // A batch's records are spread over the pool and, in a large batch,
      // out of this core's cache again by the time they are bound: fetch
      // those a few ahead while SQLite inserts this one.
      if (k + 2 < n) prefetch_record(batch.records[k + 2].data, batch.table.record_size);
      int rc = SQLITE_OK;
      int i = 1;
      for (const Column& col : columns) {
        if (is_null(r.data, col)) {
          rc = sqlite3_bind_null(st, i);
        } else if (col.type == ColumnType::text) {
          const std::string_view v = read_text(r.data, col);
          rc = sqlite3_bind_text(st, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
        } else if (col.type == ColumnType::float64) {
          const double v = read_float64(r.data, col);
          if (col.nullable && std::isnan(v)) {
            *nan_column = &col;
            return nan_into_nullable;
          }
          rc = sqlite3_bind_double(st, i, v);
        } else {
          rc = sqlite3_bind_int64(st, i, read_integer(r.data, col));
        }
        if (rc != SQLITE_OK) return rc;
        ++i;
      }
      if ((rc = sqlite3_bind_int64(st, key, r.source_id)) != SQLITE_OK) return rc;
      if ((rc = sqlite3_bind_int64(st, key + 1, r.seq)) != SQLITE_OK) return rc;
      if ((rc = sqlite3_step(st)) != SQLITE_DONE) return rc;
      if (sqlite3_changes(c.handle) == 0) c.skipped_rows = true;  // its key was there
      sqlite3_reset(st);
    }
    return SQLITE_OK;
  }

  const SqliteConfig config_;
};

}  // namespace

std::shared_ptr<Sink> open(std::string_view url) {
  SqliteConfig config = parse_sqlite_url(url);
  if (config.read_only) {
    throw url_error("auditpipe: SQLite URL '" + config.sink.redacted_url +
                    "': read_only=1 is for reading (auditpipe verify, auditpipe::Database); a sink "
                    "writes");
  }
  return std::make_shared<SqliteSink>(std::move(config));
}

}  // namespace auditpipe::sqlite

namespace auditpipe::sqlite {

SqlDatabaseConnection connect_database(std::string_view url) {
  const SqliteConfig config = parse_sqlite_url(url);
  SqlDatabaseConnection db;
  // A Database is one thread's at a time by contract; SQLite's mutex
  // keeps a consumer who shares one anyway from corrupting it.
  db.connection = open_connection(config, Threading::sqlite_serializes);
  db.dialect = &sqlite_dialect;
  db.redacted_url = config.sink.redacted_url;
  db.table_location = config.sink.table_location;
  return db;
}

}  // namespace auditpipe::sqlite
