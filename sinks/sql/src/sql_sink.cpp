// The SQL sink skeleton (auditpipe/sink/sql_sink.h): open, the write loop,
// close. The sinks derived from it supply connections and write paths.
#include "auditpipe/sink/sql_sink.h"

#include <algorithm>

#include "auditpipe/status.h"
#include "table_check.h"

namespace auditpipe {

namespace {

WriteResult result_of(std::optional<WriteFailure> failure, ConnectionPool::Lease* lease) {
  if (!failure) return WriteResult::success();
  switch (failure->kind) {
    case WriteFailure::Kind::connection:
      // Closed instead of lent again. A single connection has no pool to
      // replace it: the SQLite sink, the only one, never reports this kind.
      if (lease != nullptr) lease->invalidate();
      return WriteResult::transient_error(std::move(failure->message));
    case WriteFailure::Kind::data:
      return WriteResult::rejection(std::move(failure->message));
    case WriteFailure::Kind::configuration:
      return WriteResult::permanent_error(std::move(failure->message));
    case WriteFailure::Kind::other:
      break;
  }
  return WriteResult::transient_error(std::move(failure->message));
}

}  // namespace

SqlSink::SqlSink(const SqlDialect& dialect, SqlSinkSettings settings)
    : dialect_(dialect), settings_(std::move(settings)) {}

void SqlSink::table_ready(SqlConnection&) {}
void SqlSink::prepare_writes(SqlConnection&) {}

void SqlSink::open(const TableDescriptor& table, const SinkContext& context) {
  table_ = &table;
  text_ = sql_table_text(dialect_, table);
  try {
    // A connection of its own for the set-up: any connect error (wrong
    // password, unreachable host) and any table problem surface here, with
    // the database's own message, before the logger starts.
    std::unique_ptr<SqlConnection> setup = connect();
    sql_detail::create_or_check_table(*setup, dialect_, text_, table, settings_);
    table_ready(*setup);
    open_connections(std::move(setup), context);
  } catch (const error&) {
    throw;
  } catch (const std::exception& e) {
    throw error("auditpipe: cannot prepare table " + std::string(table.name) + " " +
                settings_.table_location + ": " + e.what());
  }
}

void SqlSink::open_connections(std::unique_ptr<SqlConnection> setup, const SinkContext& context) {
  if (settings_.single_connection) {
    prepare_writes(*setup);
    detail::MutexLock lock(single_mutex_);
    single_ = std::move(setup);
    return;
  }
  setup.reset();  // closed before the pool opens its own
  ConnectionPoolOptions pool = settings_.pool;
  pool.max_size = settings_.pool_size.value_or(std::max(1u, context.writers));
  // The first connection opens here, on this thread: the write path's own
  // set-up (a prepared insert) fails at start, not at the first batch.
  pool_ = std::make_unique<ConnectionPool>(
      [this]() -> std::unique_ptr<PooledConnection> {
        std::unique_ptr<SqlConnection> c = connect();
        prepare_writes(*c);
        return c;
      },
      pool, true);
}

WriteResult SqlSink::write(const Batch& batch) noexcept {
  try {
    if (settings_.single_connection) {
      detail::MutexLock lock(single_mutex_);
      return result_of(write_batch(*single_, batch), nullptr);
    }
    ConnectionPool::Lease lease = pool_->acquire();
    return result_of(write_batch(lease.as<SqlConnection>(), batch), &lease);
  } catch (const std::exception& e) {
    return WriteResult::transient_error(e.what());
  }
}

void SqlSink::close() noexcept {
  pool_.reset();
  detail::MutexLock lock(single_mutex_);
  single_.reset();
}

std::optional<ConnectionPoolStats> SqlSink::connection_pool_stats() const {
  if (!pool_) return std::nullopt;
  return pool_->stats();
}

}  // namespace auditpipe
