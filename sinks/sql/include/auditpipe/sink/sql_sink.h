// SqlSink: the skeleton the MySQL, PostgreSQL and SQLite sinks are built
// on. It owns what every SQL sink does the same way:
//   - open(): on a set-up connection of its own, create the table from the
//     sink's SqlDialect, or check an existing one (every column present,
//     the (source_id, seq) key, no other unique key the idempotent insert
//     would absorb, a warning for text columns shorter than the record's);
//     then open the connections writes go through: a ConnectionPool, or one
//     connection for a database that takes one writer at a time. When the
//     server cannot be reached at all (connect() throws
//     auditpipe::unreachable), open() still makes the pool, which keeps
//     connecting in the background, and rethrows: the table is then
//     created or checked at first contact;
//   - every server a connection lands on (each host of a failover list)
//     gets the table created or checked before its first batch, once; a
//     table found wrong there makes writes fail as WriteResult::permanent,
//     naming that server, until a connection gets past the check;
//   - write(): lease a connection, run the sink's write path, turn its
//     failure into a WriteResult (ok, transient, rejected, permanent) and
//     close a connection the failure left broken;
//   - cancel(): every wait of a write, and every write after it, returns
//     within milliseconds: lease waits fail (ConnectionPool::cancel), the
//     sockets of all live connections are shut down (SqlConnection::
//     cancel_io, so a statement to a server that does not answer returns),
//     connects in progress stop (Cancellation, which connect() waits
//     through);
//   - close(), describe(), connection_pool_stats().
// A sink keeps only what is its own: a dialect (with its catalog queries),
// connect(), its write paths (write_batch) with their types and error
// codes. A new SQL sink is a dialect file and a write path.
//
// Who may call: SQL sink implementations derive from SqlSink (and their
// connections from SqlConnection); the pipeline calls it as any Sink.
// A derived sink's destructor calls close(): the pool's openers call its
// connect() until the pool is gone.
//
// Thread safety: write() from several writer threads at once: each takes
// its own pooled connection, or waits for the single one. cancel() from
// any thread while writes run. open() and close() as the Sink contract
// says: before the first and after the last write.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/export.h"
#include "auditpipe/sink/cancellation.h"
#include "auditpipe/sink/connection_pool.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe {

class SealWriter;

/// A failed write path, sorted by what the skeleton does about it.
struct AUDITPIPE_EXPORT WriteFailure {
  /// What the skeleton does with the failure.
  enum class Kind {
    connection,  ///< the connection is gone or in an unknown state: closed; the batch is retried
    data,        ///< the database refuses the data itself: rejected, retrying cannot succeed
    other,       ///< anything else (a lock wait, a full disk): the batch is retried
    /// The database refuses the writes as configured (a missing privilege,
    /// a dropped table): WriteResult::permanent, retried slowly with health
    /// down and this message as the reason.
    configuration,
  };
  /// The failure's kind.
  Kind kind = Kind::other;
  /// The database's message (never a password).
  std::string message;
};

/// A connection of an SQL sink: what the pool lends, and what the table
/// check reads the catalog through (on the set-up connection, at open()).
class AUDITPIPE_EXPORT SqlConnection : public PooledConnection {
 public:
  /// The rows of one of the dialect's catalog queries (table_columns_query(),
  /// unique_keys_query) with `table` as its one parameter, every value as
  /// text (NULL as empty). Throws, with the database's message.
  virtual std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                             const std::string& table) = 0;
  /// Runs one statement with no result (CREATE TABLE). Throws, with the
  /// database's message.
  virtual void execute_ddl(const std::string& sql) = 0;
  /// Runs one statement (auditpipe::Database's execute() and query()):
  /// `?` marks positional parameters, bound from `params` as text (each
  /// connection writes them in its database's notation); the rows of its
  /// result, every value as text, NULL as nullopt (none for a statement
  /// without a result). Throws auditpipe::error with the database's message
  /// (never a password), also when the placeholders and `params` differ in
  /// number. The default throws auditpipe::error: a sink whose connections
  /// do not override it has no auditpipe::Database.
  virtual std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params);
  /// One row of query_each(): the values as text, NULL as nullopt, valid
  /// only during the call.
  using RowCallback = std::function<void(std::span<const std::optional<std::string_view>>)>;
  /// query_rows(), a row at a time, for results too large to hold (verify
  /// reads whole tables). The default runs query_rows(); a connection that
  /// can stream rows from the server overrides it.
  virtual void query_each(std::string_view sql, const std::vector<std::string>& params,
                          const RowCallback& on_row);
  /// The server this connection landed on ("db2:3306", a file's path): the
  /// table is created or checked once per server. Never a password.
  std::string server() const override = 0;
  /// Called from another thread, while this connection may be inside any
  /// call: make whatever it waits for on the server return now, as a
  /// failure (shut its socket down; SQLite: interrupt the statement). The
  /// skeleton never calls it once the connection is being destroyed.
  virtual void cancel_io() noexcept = 0;

  /// Set by a sink's write_batch() when its statement stored fewer rows
  /// than it sent, the others' keys being there already (a retry; a key a
  /// caller gave again, maybe with other values); cleared by the skeleton
  /// before. With seal=, the batch's seal is then made from the rows the
  /// table holds at its keys, read back, not from the batch.
  bool skipped_rows = false;
};

/// What a sink tells the skeleton, mostly from its URL.
struct AUDITPIPE_EXPORT SqlSinkSettings {
  std::string redacted_url;  ///< describe() and messages: never a password
  /// Where the table lives, for messages about it: "on postgresql://...",
  /// "in '/var/lib/app/audit.db'".
  std::string table_location;
  /// Create the table when it does not exist (URL option create_table).
  bool create_table = true;
  /// URL option migrate=add_columns: an existing table that lacks columns
  /// of the record gets them (ALTER TABLE ... ADD COLUMN, nullable) at open
  /// instead of being refused.
  bool migrate_add_columns = false;
  /// One connection, and one write at a time on it (SQLite: one writer per
  /// file, and no server to pool connections to), instead of a pool.
  bool single_connection = false;
  /// Unset: one connection per writer thread, and one more with seal=.
  std::optional<std::size_t> pool_size;
  ConnectionPoolOptions pool;  ///< max_size is set at open()
  /// URL options seal=, seal_key_file=, seal_anchor_file= (README,
  /// Tamper-evident tables): every stored batch gets a seal in
  /// `<table>_seals`, written soon after it by a thread of the sink's own
  /// (on a pool connection of its own: pool_size defaults to one more than
  /// the writers), or right after it on the single connection.
  seal::SealSettings seal;
};

/// The skeleton of the SQL sinks (README, One skeleton under the SQL sinks): table creation and
/// check, connections, failure sorting, cancel. A sink gives its dialect, connect() and
/// write_batch().
class AUDITPIPE_EXPORT SqlSink : public Sink {
 public:
  void open(const TableDescriptor& table, const SinkContext& context) final;
  WriteResult write(const Batch& batch) noexcept final;
  void cancel() noexcept final;
  void close() noexcept final;
  std::string describe() const final { return settings_.redacted_url; }
  std::optional<ConnectionPoolStats> connection_pool_stats() const final;
  std::optional<SealStats> seal_stats() const final;
  ~SqlSink() override;

 protected:
  /// `dialect` must outlive the sink (a constant of the sink's dialect file).
  SqlSink(const SqlDialect& dialect, SqlSinkSettings settings);

  /// A new connection with its session set up. Throws auditpipe::error
  /// naming what failed (never with a password); auditpipe::unreachable
  /// when no server answered at all (refused, timed out, no route, a name
  /// that does not resolve), so that nothing is known of the configuration
  /// yet. Called for the set-up connection, then by the pool's openers,
  /// several at once. Waits on the network through cancellation(), so
  /// that cancel() ends a connect in progress.
  virtual std::unique_ptr<SqlConnection> connect() = 0;
  /// Once, on the first connection that reaches a server (at open(), or at
  /// first contact after an unreachable open), when the table is there:
  /// where a sink chooses its write path from what the server offers.
  /// Nothing writes before it returned.
  virtual void table_ready(SqlConnection& setup);
  /// At the first contact, before the table is changed (a column added by
  /// migrate=add_columns) and once it passed the common checks: the sink's
  /// own refusals that need only the table as it is (grants, what the
  /// server offers), so that an open they refuse leaves the table alone.
  virtual void check_before_changes(SqlConnection& setup);
  /// On every connection writes will go through, before its first batch:
  /// where a write path prepares its statements. Throws auditpipe::error.
  virtual void prepare_writes(SqlConnection& connection);
  /// Writes one batch as one statement (more only where one would exceed a
  /// limit of the server), idempotent on (source_id, seq). Returns the
  /// failure, if any; an exception counts as Kind::other.
  virtual std::optional<WriteFailure> write_batch(SqlConnection& connection,
                                                  const Batch& batch) = 0;

  /// The open's check of the table (columns, types, key), again, on
  /// `connection`, creating and adding nothing: for a write path that saw
  /// the table change under it (an ALTER TABLE). Throws auditpipe::error
  /// with the open's message if the table would be refused now.
  void check_table_again(SqlConnection& connection) const;

  /// From open() on.
  const TableDescriptor& table() const noexcept { return *table_; }
  /// The table's SQL text (quoted names, insert statements), from open() on.
  const SqlTableText& table_text() const noexcept { return text_; }
  /// What connect() waits through.
  const Cancellation& cancellation() const noexcept { return cancellation_; }

 private:
  class LiveConnection;

  void open_pool(const SinkContext& context, bool open_first);
  // Options::source_id_base without a durable pool: rows under those
  // sources already (an earlier start's) would make this run's records,
  // numbered from seq 0 again, look like repeats. Refused at open.
  void refuse_reused_sources(SqlConnection& c);
  // A table with seals, opened without seal= (a URL reused without it): its
  // rows would stay unsealed for good, which verify reports. Refused at open.
  void refuse_unsealed_writes_to_sealed_table(SqlConnection& c);
  // The refusals above and check_before_changes(), at the first contact
  // (a failover's next server holds this run's own rows), before the
  // table check changes anything.
  void refuse_before_changes(SqlConnection& c, bool table_exists) AUDITPIPE_REQUIRES(table_mutex_);
  void open_connections(std::unique_ptr<SqlConnection> setup, const SinkContext& context);
  /// Throws auditpipe::error for a name longer than the dialect's
  /// max_identifier_bytes.
  void check_name_lengths() const;
  /// Creates or checks the table on `c`'s server if no connection did yet,
  /// and runs table_ready() if it never ran. Throws auditpipe::error.
  void prepare_table(SqlConnection& c) AUDITPIPE_EXCLUDES(table_mutex_);
  /// What the pool's openers run: connect, prepare_table, prepare_writes.
  std::unique_ptr<PooledConnection> open_pooled() AUDITPIPE_EXCLUDES(failure_mutex_);
  std::optional<std::string> table_failure() const AUDITPIPE_EXCLUDES(failure_mutex_);
  WriteResult write_single(const Batch& batch) AUDITPIPE_EXCLUDES(single_mutex_);
  void add_live(SqlConnection* c) noexcept AUDITPIPE_EXCLUDES(live_mutex_);
  /// write_batch() and, with seal=, the batch's seal; nothing stored while
  /// too many seals wait.
  WriteResult write_on(SqlConnection& c, const Batch& batch, ConnectionPool::Lease* lease);
  void remove_live(SqlConnection* c) noexcept AUDITPIPE_EXCLUDES(live_mutex_);

  const SqlDialect& dialect_;
  const SqlSinkSettings settings_;
  const TableDescriptor* table_ = nullptr;
  /// SinkContext::fixed_sources_first / _count, from open().
  std::int64_t fixed_sources_first_ = 0;
  std::int64_t fixed_sources_count_ = 0;
  SqlTableText text_;
  Cancellation cancellation_;  ///< declared before anything that waits through it

  /// Every connection open now, so that cancel() can cut its I/O short.
  /// A connection leaves before it is closed (LiveConnection), under the
  /// lock: cancel_io() never meets a closed socket.
  detail::Mutex live_mutex_;
  std::vector<SqlConnection*> live_ AUDITPIPE_GUARDED_BY(live_mutex_);
  bool io_cancelled_ AUDITPIPE_GUARDED_BY(live_mutex_) = false;

  /// Held while a server's table is created or checked, so that openers
  /// reaching a new server at once check it once.
  detail::Mutex table_mutex_;
  std::set<std::string> prepared_servers_ AUDITPIPE_GUARDED_BY(table_mutex_);
  bool table_ready_done_ AUDITPIPE_GUARDED_BY(table_mutex_) = false;
  /// The last table check that failed on a server (with its message), until
  /// a connection is prepared: writes then fail as permanent instead of
  /// waiting for a connection that cannot come.
  mutable detail::Mutex failure_mutex_;
  std::optional<std::string> table_failure_ AUDITPIPE_GUARDED_BY(failure_mutex_);

  /// Seals what is stored, with seal= (else null). Kept after close(), for stats().
  std::unique_ptr<SealWriter> sealer_;
  bool durable_pool_ = false;  ///< SinkContext::durable_pool: write() waits for its seal

  std::unique_ptr<ConnectionPool> pool_;  ///< unless single_connection
  /// The single connection: one write at a time (single_busy_), the others
  /// wait on single_cv_, and cancel() wakes them.
  detail::Mutex single_mutex_;
  detail::CondVar single_cv_;
  bool single_busy_ AUDITPIPE_GUARDED_BY(single_mutex_) = false;
  std::unique_ptr<SqlConnection> single_ AUDITPIPE_GUARDED_BY(single_mutex_);
};

/// An SQL sink with several write paths, one chosen at open() (MySQL,
/// PostgreSQL). `WritePath` is the sink's own enum; its first value,
/// `automatic`, lets the sink choose.
template <class WritePath>
class AUDITPIPE_EXPORT SqlSinkWithWritePaths : public SqlSink {
 public:
  /// The write path in use: from open() on, the one chosen (never
  /// `automatic`).
  WritePath write_path() const noexcept { return path_; }

 protected:
  using SqlSink::SqlSink;

  WritePath path_{};  ///< set by the sink's table_ready(), read by its write paths
};

}  // namespace auditpipe
