// The MySQL sink on the SQL sink skeleton: the write path chosen at open()
// from what the server offers, each pooled connection prepared for it, and
// the server's error codes sorted for the skeleton.
#include "auditpipe/mysql/mysql_sink.h"

#include <mysqld_error.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "mysql_config.h"
#include "mysql_connection.h"
#include "mysql_dialect.h"
#include "write_paths.h"

namespace auditpipe::mysql {

namespace {

WriteFailure::Kind kind_of(const MysqlError& e) {
  if (is_connection_error(e.code)) return WriteFailure::Kind::connection;
  if (is_configuration_error(e.code)) return WriteFailure::Kind::configuration;
  if (is_data_error(e.code)) return WriteFailure::Kind::data;
  return WriteFailure::Kind::other;
}

class MysqlSinkImpl final : public MysqlSink {
 public:
  explicit MysqlSinkImpl(MysqlConfig config)
      : MysqlSink(mysql_dialect, config.sink),
        config_(std::move(config)),
        health_(config_.endpoints.size(), config_.hosts == HostSelection::loadbalance) {}
  // The pool's openers call connect() until the pool is gone.
  ~MysqlSinkImpl() override { close(); }
  MysqlSinkImpl(const MysqlSinkImpl&) = delete;
  MysqlSinkImpl& operator=(const MysqlSinkImpl&) = delete;

  // Two connections measured faster than one on every write path
  // (bench/write_paths, README).
  unsigned preferred_writers() const noexcept override { return 2; }

 private:
  // Local infile only where LOAD DATA is asked for: table_ready() only ever
  // chooses it then. (From the configuration, not path_: openers connect
  // while the first contact's table_ready() may be choosing.)
  std::unique_ptr<SqlConnection> connect() override {
    return MysqlConnection::connect(config_, config_.write_path == WritePath::load_data,
                                    cancellation(), &health_);
  }

  // Before migrate=add_columns adds a column: the grant on the key columns
  // (the record's new columns do not exist yet) and the write path.
  void check_before_changes(SqlConnection& setup) override {
    auto& c = static_cast<MysqlConnection&>(setup);
    check_insert_privilege(c, "INSERT INTO " + table_text().table + " (" +
                                  mysql_dialect.quote(source_id_column) + "," +
                                  mysql_dialect.quote(seq_column) + ") VALUES (?,?)");
    check_write_path(c);
  }

  void table_ready(SqlConnection& setup) override {
    auto& c = static_cast<MysqlConnection&>(setup);
    check_insert_privilege(c, table_text().single_row_insert());
    check_seals_insert_privilege(c);
    check_write_path(c);
  }

  void check_write_path(MysqlConnection& c) {
    switch (config_.write_path) {
      case WritePath::automatic:
        // Array binding measured fastest (README, "MySQL write paths"); a
        // server without MariaDB's bulk execution gets multi-row text.
        path_ = c.bulk_supported() ? WritePath::bulk : WritePath::text;
        return;
      case WritePath::bulk:
        if (!c.bulk_supported()) {
          throw error(c.hide_password(
              "auditpipe: write_path=bulk needs a MariaDB server with bulk execution; " +
              c.endpoint().describe() + " does not offer it (use write_path=auto or text)"));
        }
        path_ = WritePath::bulk;
        return;
      default:
        path_ = config_.write_path;
    }
  }

  // Every write path needs INSERT on the table, and the insert's ON
  // DUPLICATE KEY UPDATE seq = seq (what skips a stored key) UPDATE on
  // every column it inserts (MariaDB asks that much) and SELECT on seq.
  // Preparing the insert asks the server itself, which knows the user's
  // grants (roles, wildcard database grants, column grants) better than
  // any catalog query, and takes no lock a writer could be waiting behind:
  // a user who may only read, or only insert, is refused here, at start,
  // not at every batch.
  void check_insert_privilege(MysqlConnection& c, const std::string& text) const {
    if (const auto e = prepare_refused(c, text)) {
      throw error(c.hide_password(
          "auditpipe: table " + std::string(table().name) + " " + config_.sink.table_location +
          ": the user may not INSERT into it as auditpipe does (INSERT ... ON DUPLICATE KEY "
          "UPDATE seq = seq, which skips a stored key: the server asks for INSERT and UPDATE "
          "on the table and SELECT on its seq column, e.g. GRANT INSERT, UPDATE, SELECT (seq) "
          "ON " +
          table_text().table + "); every batch would fail (" + e->describe() + ")"));
    }
  }

  // With seal=, the same for the seals' insert (the seal writer has checked
  // that the user may read the seals table).
  void check_seals_insert_privilege(MysqlConnection& c) const {
    if (config_.sink.seal.mode == seal::Mode::none) return;
    const std::string seals = mysql_dialect.quote(seal::seals_table(table().name));
    if (const auto e =
            prepare_refused(c, seal::seal_insert_statement(mysql_dialect, table().name))) {
      throw error(c.hide_password(seal::seals_insert_refused(
          seals + " " + config_.sink.table_location, e->describe(), true)));
    }
  }

  // What the server said when it would not prepare `text`, or nothing. A
  // connection lost under it is an outage, not a refusal: its error is
  // thrown as it is.
  static std::optional<MysqlError> prepare_refused(MysqlConnection& c, const std::string& text) {
    MYSQL_STMT* stmt = mysql_stmt_init(c.handle());
    if (stmt == nullptr) {
      throw error(c.hide_password("auditpipe: cannot create a MySQL statement: " +
                                  c.last_error().describe()));
    }
    const bool prepared = mysql_stmt_prepare(stmt, text.data(), text.size()) == 0;
    const MysqlError e{mysql_stmt_errno(stmt), mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt)};
    mysql_stmt_close(stmt);
    if (prepared) return std::nullopt;
    if (is_connection_error(e.code) || !c.ping()) {
      throw error(c.hide_password("auditpipe: " + c.endpoint().describe() +
                                  ": lost while checking the user's grants: " + e.describe()));
    }
    return e;
  }

  void prepare_writes(SqlConnection& connection) override {
    auto& c = static_cast<MysqlConnection&>(connection);
    if (path_ == WritePath::bulk) {
      if (!c.bulk_supported()) {
        // A failover to a server without bulk execution: this connection
        // writes text instead (the state is per connection).
        diagnostics()->warn("auditpipe: {} does not offer bulk execution; writing as text",
                            c.hide_password(c.endpoint().describe()));
      } else {
        prepare_bulk(c, table_text(), table());
      }
    } else if (path_ == WritePath::load_data) {
      prepare_load_data(c);
    }
  }

  std::optional<WriteFailure> write_batch(SqlConnection& connection, const Batch& batch) override {
    auto& c = static_cast<MysqlConnection&>(connection);
    // Galera's wsrep_max_ws_rows: no statement (each its own write set, in
    // its own transaction: committed(), write_paths.h) writes more rows; a
    // retry of the whole batch is safe on the (source_id, seq) key.
    const std::size_t rows = c.max_statement_rows();
    std::optional<MysqlError> e;
    for (std::size_t at = 0; at < batch.records.size() && !e;) {
      const std::size_t n =
          rows == 0 ? batch.records.size() - at : std::min(rows, batch.records.size() - at);
      e = write_part(c, Batch{batch.table, batch.records.subspan(at, n), batch.replayed});
      at += n;
    }
    if (!e && c.galera()) {
      // Measured on MariaDB 10.11 with galera-4 (tests/cluster): an INSERT
      // waiting for replication when its node fell out of the primary
      // component (the other two killed) returned success, and the rows
      // were on no node afterwards; and in the kill and pause runs, around
      // the reconfigurations a node's death or return causes, a write
      // acknowledged with wsrep_ready=ON after it was on no node either
      // (424 and 406 rows, one batch each). So on Galera a write counts
      // only if its node is still in the primary component after it and
      // the cluster's membership did not change since the previous write:
      // if not, the batch is written again (it may have committed: the key
      // absorbs the retry). Each statement also commits explicitly on
      // Galera (committed(), write_paths.h); this stays as a second net.
      if (auto doubt = c.galera_write_doubt()) {
        e = MysqlError{ER_UNKNOWN_COM_ERROR, "08S01", *doubt + ": not counted as stored"};
      }
    }
    if (!e) return std::nullopt;
    const WriteFailure::Kind kind = kind_of(*e);
    if (kind == WriteFailure::Kind::connection) {
      // Killed, lost during the statement (ambiguous: it may have committed;
      // the retry on another node is absorbed by the key), out of the
      // primary component: the next connects try the other hosts first.
      health_.avoid(c.endpoint_index());
    } else if (is_certification_conflict(e->code)) {
      const auto n = ++certification_conflicts_;
      diagnostics()->debug("auditpipe: {}: deadlock or certification conflict (#{}); retrying",
                           c.hide_password(c.endpoint().describe()), n);
    }
    // The endpoint is a host name, which the password may equal.
    return WriteFailure{kind, c.hide_password(c.endpoint().describe() + ": " + e->describe())};
  }

  std::optional<MysqlError> write_part(MysqlConnection& c, const Batch& batch) {
    c.rows_stored = 0;
    std::optional<MysqlError> e;
    if (path_ == WritePath::bulk && c.bulk_supported()) {
      e = write_bulk(c, table_text(), batch);
    } else if (path_ == WritePath::load_data) {
      e = write_load_data(c, table_text(), batch);
    } else {
      e = write_text(c, table_text(), batch);
    }
    if (e || c.rows_stored >= batch.records.size()) return e;
    c.skipped_rows = true;
    return check_skipped_rows(c, batch);
  }

  // Fewer rows stored than sent: repeats of (source_id, seq) (a retry, a
  // replay), which the insert skips by design, or rows a unique key on
  // other columns absorbed, which it skips as well (the insert cannot name
  // one key only). The table check refuses such a key at start; one added
  // while the logger runs made rows vanish, counted as written. Each row
  // of the batch is looked for by its key: one missing fails the batch as
  // a data error, and the writer isolates it and refuses it by name.
  std::optional<MysqlError> check_skipped_rows(MysqlConnection& c, const Batch& batch) {
    // Each key once: caller-given keys may repeat one in a batch.
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;
    keys.reserve(batch.records.size());
    for (const RecordRef& r : batch.records) keys.emplace_back(r.source_id, r.seq);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    constexpr std::size_t per_query = 1000;
    const std::string head = "SELECT COUNT(*) FROM " + table_text().table + " WHERE (" +
                             mysql_dialect.quote(source_id_column) + ", " +
                             mysql_dialect.quote(seq_column) + ") IN (";
    for (std::size_t at = 0; at < keys.size(); at += per_query) {
      const std::size_t n = std::min(per_query, keys.size() - at);
      std::string sql = head;
      for (std::size_t i = at; i < at + n; ++i) {
        sql += i == at ? "(" : ",(";
        sql += std::to_string(keys[i].first);
        sql += ',';
        sql += std::to_string(keys[i].second);
        sql += ')';
      }
      sql += ')';
      const auto rows = c.query_rows(sql, {});
      const std::string found = rows.empty() || rows[0].empty() || !rows[0][0] ? "" : *rows[0][0];
      if (found == std::to_string(n)) continue;
      return MysqlError{ER_DUP_ENTRY, "23000",
                        "a row of the batch was not stored, nor is one with its (source_id, seq) "
                        "there: a unique key on other columns holds a row with its values (the "
                        "insert skips a conflict on any unique key; the table check refuses such "
                        "a key at start, so it was added since)"};
    }
    return std::nullopt;
  }

  const MysqlConfig config_;
  HostHealth health_;
  std::atomic<std::uint64_t> certification_conflicts_{0};
};

}  // namespace

std::shared_ptr<MysqlSink> open(std::string_view url) {
  return std::make_shared<MysqlSinkImpl>(parse_mysql_url(url));
}

}  // namespace auditpipe::mysql

namespace auditpipe::mysql {

SqlDatabaseConnection connect_database(std::string_view url) {
  const MysqlConfig config = parse_mysql_url(url);
  const Cancellation never;  // the connect's waits; nothing cancels them
  SqlDatabaseConnection db;
  db.connection = MysqlConnection::connect(config, false, never);
  db.dialect = &mysql_dialect;
  db.redacted_url = config.sink.redacted_url;
  db.table_location = config.sink.table_location;
  db.password = config.password;
  return db;
}

}  // namespace auditpipe::mysql
