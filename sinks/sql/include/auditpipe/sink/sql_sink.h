// SqlSink: the skeleton the MySQL, PostgreSQL and SQLite sinks are built
// on. It owns what every SQL sink does the same way:
//   - open(): on a set-up connection of its own, create the table from the
//     sink's SqlDialect, or check an existing one (every column present,
//     the (source_id, seq) key, no other unique key the idempotent insert
//     would absorb, a warning for text columns shorter than the record's);
//     then open the connections writes go through: a ConnectionPool, or one
//     connection for a database that takes one writer at a time;
//   - write(): lease a connection, run the sink's write path, turn its
//     failure into a WriteResult (ok, transient, rejected) and close a
//     connection the failure left broken;
//   - close(), describe(), connection_pool_stats().
// A sink keeps only what is its own: a dialect (with its catalog queries),
// connect(), its write paths (write_batch) with their types and error
// codes. A new SQL sink is a dialect file and a write path.
//
// Who may call: SQL sink implementations derive from SqlSink (and their
// connections from SqlConnection); the pipeline calls it as any Sink.
//
// Thread safety: write() from several writer threads at once: each takes
// its own pooled connection, or waits for the single one. open() and
// close() as the Sink contract says: before the first and after the last
// write.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/connection_pool.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe {

// A failed write path, sorted by what the skeleton does about it.
struct WriteFailure {
  enum class Kind {
    connection,  // the connection is gone or in an unknown state: closed; the batch is retried
    data,        // the database refuses the data itself: rejected, retrying cannot succeed
    other,       // anything else (a lock wait, a full disk): the batch is retried
    // The database refuses the writes as configured (a missing privilege,
    // a dropped table): WriteResult::permanent, retried slowly with health
    // down and this message as the reason.
    configuration,
  };
  Kind kind = Kind::other;
  std::string message;
};

// A connection of an SQL sink: what the pool lends, and what the table
// check reads the catalog through (on the set-up connection, at open()).
class SqlConnection : public PooledConnection {
 public:
  // The rows of one of the dialect's catalog queries (table_columns_query(),
  // unique_keys_query) with `table` as its one parameter, every value as
  // text (NULL as empty). Throws, with the database's message.
  virtual std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                             const std::string& table) = 0;
  // Runs one statement with no result (CREATE TABLE). Throws, with the
  // database's message.
  virtual void execute_ddl(const std::string& sql) = 0;
};

// What a sink tells the skeleton, mostly from its URL.
struct SqlSinkSettings {
  std::string redacted_url;  // describe() and messages: never a password
  // Where the table lives, for messages about it: "on postgresql://...",
  // "in '/var/lib/app/audit.db'".
  std::string table_location;
  bool create_table = true;
  // One connection, and one write at a time on it (SQLite: one writer per
  // file, and no server to pool connections to), instead of a pool.
  bool single_connection = false;
  std::optional<std::size_t> pool_size;  // unset: one connection per writer thread
  ConnectionPoolOptions pool;            // max_size is set at open()
};

class SqlSink : public Sink {
 public:
  void open(const TableDescriptor& table, const SinkContext& context) final;
  WriteResult write(const Batch& batch) noexcept final;
  void close() noexcept final;
  std::string describe() const final { return settings_.redacted_url; }
  std::optional<ConnectionPoolStats> connection_pool_stats() const final;

 protected:
  // `dialect` must outlive the sink (a constant of the sink's dialect file).
  SqlSink(const SqlDialect& dialect, SqlSinkSettings settings);

  // A new connection with its session set up. Throws auditpipe::error
  // naming what failed (never with a password). Called for the set-up
  // connection, then by the pool's openers, several at once.
  virtual std::unique_ptr<SqlConnection> connect() = 0;
  // Once at open(), on the set-up connection, when the table is there:
  // where a sink chooses its write path from what the server offers.
  virtual void table_ready(SqlConnection& setup);
  // On every connection writes will go through, before its first batch:
  // where a write path prepares its statements. Throws auditpipe::error.
  virtual void prepare_writes(SqlConnection& connection);
  // Writes one batch as one statement (more only where one would exceed a
  // limit of the server), idempotent on (source_id, seq). Returns the
  // failure, if any; an exception counts as Kind::other.
  virtual std::optional<WriteFailure> write_batch(SqlConnection& connection,
                                                  const Batch& batch) = 0;

  // From open() on.
  const TableDescriptor& table() const noexcept { return *table_; }
  const SqlTableText& table_text() const noexcept { return text_; }

 private:
  void open_connections(std::unique_ptr<SqlConnection> setup, const SinkContext& context);

  const SqlDialect& dialect_;
  const SqlSinkSettings settings_;
  const TableDescriptor* table_ = nullptr;
  SqlTableText text_;
  std::unique_ptr<ConnectionPool> pool_;  // unless single_connection
  detail::Mutex single_mutex_;            // held for each write on the single connection
  std::unique_ptr<SqlConnection> single_ AUDITPIPE_GUARDED_BY(single_mutex_);
};

// An SQL sink with several write paths, one chosen at open() (MySQL,
// PostgreSQL). `WritePath` is the sink's own enum; its first value,
// `automatic`, lets the sink choose.
template <class WritePath>
class SqlSinkWithWritePaths : public SqlSink {
 public:
  // The write path in use: from open() on, the one chosen (never
  // `automatic`).
  WritePath write_path() const noexcept { return path_; }

 protected:
  using SqlSink::SqlSink;

  WritePath path_{};  // set by the sink's table_ready(), read by its write paths
};

}  // namespace auditpipe
