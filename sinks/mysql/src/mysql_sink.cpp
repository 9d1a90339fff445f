#include "auditpipe/mysql/mysql_sink.h"

#include <spdlog/spdlog.h>

#include <mutex>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "mysql_config.h"
#include "mysql_connection.h"
#include "table_sql.h"
#include "write_paths.h"

namespace auditpipe::mysql {

std::string_view to_string(WritePath path) noexcept {
  switch (path) {
    case WritePath::automatic:
      return "auto";
    case WritePath::bulk:
      return "bulk";
    case WritePath::text:
      return "text";
    case WritePath::load_data:
      return "load_data";
  }
  return "unknown";
}

namespace {

class MysqlSinkImpl final : public MysqlSink {
 public:
  explicit MysqlSinkImpl(MysqlConfig config) : config_(std::move(config)) {}

  void open(const TableDescriptor& table, const SinkContext& context) override {
    table_ = &table;
    sql_ = table_sql(table);
    {
      // One connection of its own for the set-up: any connect error (wrong
      // password, unreachable host) and any table problem surface here.
      auto setup = MysqlConnection::connect(config_, false);
      prepare_table(*setup, table, config_);
      path_ = choose_path(*setup);
    }
    ConnectionPoolOptions pool = config_.pool;
    pool.max_size = config_.pool_size.value_or(std::max(1u, context.writers));
    // The first connection opens here: the write path's own set-up (the
    // prepared insert) fails at start, not at the first batch.
    pool_ = std::make_unique<ConnectionPool>([this] { return connect(); }, pool, true);
  }

  WriteResult write(const Batch& batch) noexcept override {
    try {
      ConnectionPool::Lease lease = pool_->acquire();
      auto& c = lease.as<MysqlConnection>();
      std::optional<MysqlError> e;
      if (path_ == WritePath::bulk && c.bulk_supported()) {
        e = write_bulk(c, sql_, batch);
      } else if (path_ == WritePath::load_data) {
        e = write_load_data(c, sql_, batch);
      } else {
        e = write_text(c, sql_, batch);
      }
      if (!e) return WriteResult::success();
      std::string message = c.endpoint().describe() + ": " + e->describe();
      if (is_connection_error(e->code)) {
        lease.invalidate();
        return WriteResult::transient_error(std::move(message));
      }
      if (is_data_error(e->code)) return WriteResult::rejection(std::move(message));
      return WriteResult::transient_error(std::move(message));
    } catch (const std::exception& e) {
      return WriteResult::transient_error(e.what());
    }
  }

  void close() noexcept override { pool_.reset(); }

  std::string describe() const override { return config_.redacted_url; }
  WritePath write_path() const noexcept override { return path_; }
  // Two connections measured faster than one on every write path
  // (bench/write_paths, README).
  unsigned preferred_writers() const noexcept override { return 2; }
  std::optional<ConnectionPoolStats> connection_pool_stats() const override {
    if (!pool_) return std::nullopt;
    return pool_->stats();
  }
  ConnectionPoolStats pool_stats() const override {
    return pool_ ? pool_->stats() : ConnectionPoolStats{};
  }

 private:
  WritePath choose_path(MysqlConnection& c) const {
    switch (config_.write_path) {
      case WritePath::automatic:
        // Array binding measured fastest (README, "MySQL write paths"); a
        // server without MariaDB's bulk execution gets multi-row text.
        return c.bulk_supported() ? WritePath::bulk : WritePath::text;
      case WritePath::bulk:
        if (!c.bulk_supported()) {
          throw error("auditpipe: write_path=bulk needs a MariaDB server with bulk execution; " +
                      c.endpoint().describe() + " does not offer it (use write_path=auto or text)");
        }
        return WritePath::bulk;
      default:
        return config_.write_path;
    }
  }

  std::unique_ptr<PooledConnection> connect() const {
    auto c = MysqlConnection::connect(config_, path_ == WritePath::load_data);
    if (path_ == WritePath::bulk) {
      if (!c->bulk_supported()) {
        // A failover to a server without bulk execution: this connection
        // writes text instead (the state is per connection).
        diagnostics()->warn("auditpipe: {} does not offer bulk execution; writing as text",
                            c->endpoint().describe());
      } else {
        prepare_bulk(*c, sql_, *table_);
      }
    } else if (path_ == WritePath::load_data) {
      prepare_load_data(*c);
    }
    return c;
  }

  const MysqlConfig config_;
  const TableDescriptor* table_ = nullptr;
  TableSql sql_;
  WritePath path_ = WritePath::text;
  std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace

std::shared_ptr<MysqlSink> open(std::string_view url) {
  return std::make_shared<MysqlSinkImpl>(parse_mysql_url(url));
}

}  // namespace auditpipe::mysql
