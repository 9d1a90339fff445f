// The MySQL sink on the SQL sink skeleton: the write path chosen at open()
// from what the server offers, each pooled connection prepared for it, and
// the server's error codes sorted for the skeleton.
#include "auditpipe/mysql/mysql_sink.h"

#include <spdlog/spdlog.h>

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
      : MysqlSink(mysql_dialect, config.sink), config_(std::move(config)) {}
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
                                    cancellation());
  }

  void table_ready(SqlConnection& setup) override {
    auto& c = static_cast<MysqlConnection&>(setup);
    check_insert_privilege(c);
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

  // Every write path needs INSERT on the table. Preparing the insert asks
  // the server itself, which knows the user's grants (roles, wildcard
  // database grants) better than any catalog query: a user who may only
  // read is refused here, at start, not at every batch.
  void check_insert_privilege(MysqlConnection& c) const {
    MYSQL_STMT* stmt = mysql_stmt_init(c.handle());
    if (stmt == nullptr) {
      throw error(c.hide_password("auditpipe: cannot create a MySQL statement: " +
                                  c.last_error().describe()));
    }
    const std::string text = table_text().single_row_insert();
    const bool prepared = mysql_stmt_prepare(stmt, text.data(), text.size()) == 0;
    const MysqlError e{mysql_stmt_errno(stmt), mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt)};
    mysql_stmt_close(stmt);
    if (!prepared) {
      throw error(c.hide_password(
          "auditpipe: table " + std::string(table().name) + " " + config_.sink.table_location +
          ": the user may not INSERT into it; every batch would fail (" + e.describe() + ")"));
    }
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
    std::optional<MysqlError> e;
    if (path_ == WritePath::bulk && c.bulk_supported()) {
      e = write_bulk(c, table_text(), batch);
    } else if (path_ == WritePath::load_data) {
      e = write_load_data(c, table_text(), batch);
    } else {
      e = write_text(c, table_text(), batch);
    }
    if (!e) return std::nullopt;
    // The endpoint is a host name, which the password may equal.
    return WriteFailure{kind_of(*e),
                        c.hide_password(c.endpoint().describe() + ": " + e->describe())};
  }

  const MysqlConfig config_;
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
