// The SQL sink skeleton (auditpipe/sink/sql_sink.h): open, the table
// prepared on every server, the write loop, cancel, close. The sinks
// derived from it supply connections and write paths.
#include "auditpipe/sink/sql_sink.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
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

// A pooled connection the sink knows is open: registered for cancel() from
// its first moment, and taken off before it is closed.
class SqlSink::LiveConnection final : public PooledConnection {
 public:
  LiveConnection(SqlSink& sink, std::unique_ptr<SqlConnection> connection)
      : sink_(sink), connection_(std::move(connection)) {
    sink_.add_live(connection_.get());
  }
  ~LiveConnection() override {
    sink_.remove_live(connection_.get());
    connection_.reset();
  }
  LiveConnection(const LiveConnection&) = delete;
  LiveConnection& operator=(const LiveConnection&) = delete;

  bool ping() noexcept override { return connection_->ping(); }
  std::string server() const override { return connection_->server(); }
  SqlConnection& connection() noexcept { return *connection_; }

 private:
  SqlSink& sink_;
  std::unique_ptr<SqlConnection> connection_;
};

SqlSink::SqlSink(const SqlDialect& dialect, SqlSinkSettings settings)
    : dialect_(dialect), settings_(std::move(settings)) {}

void SqlSink::table_ready(SqlConnection&) {}
void SqlSink::prepare_writes(SqlConnection&) {}

void SqlSink::open(const TableDescriptor& table, const SinkContext& context) {
  table_ = &table;
  text_ = sql_table_text(dialect_, table);
  if (settings_.seal.mode != seal::Mode::none) {
    if (settings_.seal.mode == seal::Mode::hmac) {
      std::string key_file = settings_.seal.key_file;
      if (key_file.empty()) {
        if (const char* env = std::getenv("AUDITPIPE_SEAL_KEY_FILE")) key_file = env;
      }
      seal_key_ = seal::read_key_file(key_file);
    }
    // Idempotent: a seal statement that failed ambiguously (stored, but the
    // answer lost) is written again without a conflict.
    const std::string seals = dialect_.quote(seal::seals_table(table.name));
    seal_insert_ = "INSERT INTO " + seals +
                   " (seal_no, ranges, row_count, prev_digest, digest, sealed_at) VALUES "
                   "(?, ?, ?, ?, ?, ?)";
    seal_insert_ +=
        dialect_.idempotent_insert == SqlDialect::IdempotentInsert::on_duplicate_key_update
            ? " ON DUPLICATE KEY UPDATE seal_no = seal_no"
            : " ON CONFLICT (seal_no) DO NOTHING";
  }
  try {
    // A connection of its own for the set-up: any connect error (wrong
    // password, unknown database) and any table problem surface here, with
    // the database's own message, before the logger starts.
    std::unique_ptr<SqlConnection> setup;
    try {
      setup = connect();
    } catch (const unreachable&) {
      // Nothing answered: the logger may start anyway (Options::
      // start_while_unreachable). The pool connects in the background and
      // prepares the table at first contact.
      if (!settings_.single_connection) open_pool(context, false);
      throw;
    }
    prepare_table(*setup);
    open_connections(std::move(setup), context);
  } catch (const error&) {
    throw;
  } catch (const std::exception& e) {
    throw error("auditpipe: cannot prepare table " + std::string(table.name) + " " +
                settings_.table_location + ": " + e.what());
  }
}

void SqlSink::prepare_table(SqlConnection& c) {
  const std::string server = c.server();
  detail::MutexLock lock(table_mutex_);
  if (prepared_servers_.count(server) == 0) {
    sql_detail::create_or_check_table(c, dialect_, text_, *table_, settings_);
    prepared_servers_.insert(server);
  }
  if (!table_ready_done_) {
    if (settings_.seal.mode != seal::Mode::none) prepare_seals(c);
    table_ready(c);
    table_ready_done_ = true;
  }
}

void SqlSink::open_connections(std::unique_ptr<SqlConnection> setup, const SinkContext& context) {
  if (settings_.single_connection) {
    prepare_writes(*setup);
    add_live(setup.get());
    detail::MutexLock lock(single_mutex_);
    single_ = std::move(setup);
    return;
  }
  setup.reset();  // closed before the pool opens its own
  // The first connection opens here, on this thread: the write path's own
  // set-up (a prepared insert) fails at start, not at the first batch.
  open_pool(context, true);
}

void SqlSink::open_pool(const SinkContext& context, bool open_first) {
  ConnectionPoolOptions pool = settings_.pool;
  pool.max_size = settings_.pool_size.value_or(std::max(1u, context.writers));
  pool_ = std::make_unique<ConnectionPool>([this] { return open_pooled(); }, pool, open_first);
}

std::unique_ptr<PooledConnection> SqlSink::open_pooled() {
  auto live = std::make_unique<LiveConnection>(*this, connect());
  SqlConnection& c = live->connection();
  try {
    // A server this sink has not written to yet (another host of a
    // failover list, or the first contact after an unreachable open) gets
    // its table created or checked before its first batch.
    prepare_table(c);
  } catch (const std::exception& e) {
    // A connection still alive after the check failed met a table (or
    // grants) it cannot write: writes say so, as permanent failures, until
    // a connection gets past the check. One that died was an outage.
    if (!cancellation_.cancelled() && c.ping()) {
      const std::string message = std::string(e.what()) + " (server " + c.server() + ")";
      detail::MutexLock lock(failure_mutex_);
      table_failure_ = message;
      throw error(message);
    }
    throw;
  }
  prepare_writes(c);
  {
    detail::MutexLock lock(failure_mutex_);
    table_failure_.reset();
  }
  return live;
}

std::optional<std::string> SqlSink::table_failure() const {
  detail::MutexLock lock(failure_mutex_);
  return table_failure_;
}

void SqlSink::add_live(SqlConnection* c) noexcept {
  detail::MutexLock lock(live_mutex_);
  live_.push_back(c);
  // Made while cancel() ran, or after: nothing it does may wait either.
  if (io_cancelled_) c->cancel_io();
}

void SqlSink::remove_live(SqlConnection* c) noexcept {
  detail::MutexLock lock(live_mutex_);
  std::erase(live_, c);
}

WriteResult SqlSink::write(const Batch& batch) noexcept {
  try {
    if (cancellation_.cancelled()) {
      return WriteResult::transient_error("auditpipe: " + settings_.redacted_url +
                                          ": cancelled (close() ran out of time)");
    }
    if (settings_.single_connection) return write_single(batch);
    ConnectionPool::Lease lease;
    if (std::optional<std::string> refused = table_failure()) {
      // The last server reached has a table this sink cannot write: no
      // connection is coming until someone fixes it. One already open (to
      // a server whose table was fine) is still used.
      lease = pool_->try_acquire();
      if (!lease) return WriteResult::permanent_error(std::move(*refused));
    } else {
      lease = pool_->acquire();
    }
    SqlConnection& c = lease.as<LiveConnection>().connection();
    std::optional<WriteFailure> failure = write_batch(c, batch);
    if (!failure && settings_.seal.mode != seal::Mode::none) seal_batch(c, batch);
    return result_of(std::move(failure), &lease);
  } catch (const std::exception& e) {
    return WriteResult::transient_error(e.what());
  }
}

WriteResult SqlSink::write_single(const Batch& batch) {
  SqlConnection* c = nullptr;
  {
    detail::MutexLock lock(single_mutex_);
    while (single_busy_ && !cancellation_.cancelled()) single_cv_.wait(single_mutex_);
    if (cancellation_.cancelled()) {
      return WriteResult::transient_error("auditpipe: " + settings_.redacted_url +
                                          ": cancelled (close() ran out of time)");
    }
    single_busy_ = true;
    c = single_.get();
  }
  struct Done {
    SqlSink& s;
    ~Done() {
      {
        detail::MutexLock lock(s.single_mutex_);
        s.single_busy_ = false;
      }
      s.single_cv_.notify_one();
    }
  } done{*this};
  std::optional<WriteFailure> failure = write_batch(*c, batch);
  if (!failure && settings_.seal.mode != seal::Mode::none) seal_batch(*c, batch);
  return result_of(std::move(failure), nullptr);
}

void SqlSink::cancel() noexcept {
  // Lease waits fail; connects in progress (and any that start) return;
  // then whatever a live connection waits for on its server.
  if (pool_) pool_->cancel();
  cancellation_.cancel();
  {
    detail::MutexLock lock(single_mutex_);  // a waiter is either waiting or sees the flag
  }
  single_cv_.notify_all();
  detail::MutexLock lock(live_mutex_);
  io_cancelled_ = true;
  for (SqlConnection* c : live_) c->cancel_io();
}

void SqlSink::prepare_seals(SqlConnection& c) {
  const std::string seals = dialect_.quote(seal::seals_table(table_->name));
  if (settings_.create_table) {
    c.execute_ddl("CREATE TABLE IF NOT EXISTS " + seals +
                  " (seal_no BIGINT NOT NULL PRIMARY KEY, ranges TEXT NOT NULL, row_count BIGINT "
                  "NOT NULL, prev_digest VARCHAR(64) NOT NULL, digest VARCHAR(64) NOT NULL, "
                  "sealed_at BIGINT NOT NULL)");
  }
  std::vector<std::vector<std::optional<std::string>>> last;
  try {
    last = c.query_rows("SELECT seal_no, digest, ranges, row_count, prev_digest, sealed_at FROM " +
                            seals + " ORDER BY seal_no DESC LIMIT 1",
                        {});
  } catch (const std::exception& e) {
    throw error("auditpipe: seal=: the seals table " + seals + " " + settings_.table_location +
                " is missing or lacks columns (seal_no, ranges, row_count, prev_digest, digest, "
                "sealed_at): " +
                e.what());
  }
  detail::MutexLock lock(seal_mutex_);
  if (seals_ready_) return;
  seals_ready_ = true;
  if (last.empty() || !last[0][0] || !last[0][1]) {
    next_seal_no_ = 1;
    last_digest_ = seal::genesis_digest(table_->name);
  } else {
    next_seal_no_ = std::stoll(*last[0][0]) + 1;
    last_digest_ = *last[0][1];
    sealed_no_ = next_seal_no_ - 1;
    sealed_digest_ = last_digest_;
  }
}

void SqlSink::seal_batch(SqlConnection& c, const Batch& batch) noexcept {
  try {
    std::vector<const RecordRef*> rows;
    rows.reserve(batch.records.size());
    for (const RecordRef& r : batch.records) rows.push_back(&r);
    std::sort(rows.begin(), rows.end(), [](const RecordRef* a, const RecordRef* b) {
      return a->source_id != b->source_id ? a->source_id < b->source_id : a->seq < b->seq;
    });
    seal::RowEncoder enc;
    seal::Sha256 h;
    // The batch's keys, exactly: per source, its seqs as runs ("sid:0-499"
    // for the dense seqs of the producer path; "sid:0,118,240" for byte
    // offsets). A source's records are not contiguous across batches (the
    // ingest tool's and several writers' batches interleave), so a min-max
    // range would not tell the verifier which rows a seal holds.
    std::string ranges;
    std::int64_t sid = 0, lo = 0, hi = -2;
    bool open_run = false;
    auto close_run = [&] {
      if (!open_run) return;
      ranges += std::to_string(lo);
      if (hi != lo) ranges += '-' + std::to_string(hi);
    };
    for (const RecordRef* r : rows) {
      for (const Column& col : batch.table.columns) {
        if (is_null(r->data, col)) {
          enc.null();
        } else if (col.type == ColumnType::float64) {
          enc.float64(read_float64(r->data, col));
        } else if (col.type == ColumnType::text) {
          enc.text(read_text(r->data, col));
        } else {
          enc.integer(read_integer(r->data, col));
        }
      }
      enc.key(r->source_id, r->seq);
      if (enc.bytes().size() >= 64 * 1024) {  // digested in large pieces
        h.update(enc.bytes());
        enc.clear();
      }
      if (open_run && r->source_id == sid && r->seq == hi + 1) {
        hi = r->seq;
        continue;
      }
      close_run();
      if (!open_run || r->source_id != sid) {
        if (open_run) ranges += ';';
        ranges += std::to_string(r->source_id) + ':';
      } else {
        ranges += ',';
      }
      open_run = true;
      sid = r->source_id;
      lo = hi = r->seq;
    }
    close_run();
    h.update(enc.bytes());
    const std::string rows_digest = h.final_hex();
    const auto count = static_cast<std::int64_t>(rows.size());
    {
      detail::MutexLock lock(seal_mutex_);
      PendingSeal p{next_seal_no_, std::move(ranges), count, last_digest_, {}};
      p.digest = seal::seal_digest(
          settings_.seal.mode, seal_key_,
          seal::seal_message(p.prev_digest, p.seal_no, p.ranges, p.row_count, rows_digest));
      ++next_seal_no_;
      last_digest_ = p.digest;
      pending_seals_.push_back(std::move(p));
    }
    flush_seals(c);
  } catch (const std::exception& e) {
    diagnostics()->warn("auditpipe: sealing a batch of {} failed: {}", table_->name, e.what());
  }
}

void SqlSink::flush_seals(SqlConnection& c) {
  // The seals pending now are this call's to write: seal_no and the chain
  // were fixed under the lock, so writers store their seals at once, each
  // on its own connection, and the table orders them by seal_no.
  std::vector<PendingSeal> mine;
  {
    detail::MutexLock lock(seal_mutex_);
    mine.swap(pending_seals_);
  }
  if (mine.empty()) return;
  std::size_t done = 0;
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const PendingSeal& p : mine) {
    try {
      c.query_rows(seal_insert_, {std::to_string(p.seal_no), p.ranges, std::to_string(p.row_count),
                                  p.prev_digest, p.digest, std::to_string(now_us)});
    } catch (const std::exception& e) {
      // Kept, and written before the next seal's: the chain never skips.
      diagnostics()->warn("auditpipe: seal {} of {} not stored yet ({} pending): {}", p.seal_no,
                          table_->name, mine.size() - done, e.what());
      break;
    }
    ++done;
  }
  detail::MutexLock lock(seal_mutex_);
  if (done < mine.size()) {
    for (std::size_t i = done; i < mine.size(); ++i) pending_seals_.push_back(std::move(mine[i]));
    std::sort(pending_seals_.begin(), pending_seals_.end(),
              [](const PendingSeal& x, const PendingSeal& y) { return x.seal_no < y.seal_no; });
  }
  bool advanced = false;
  for (std::size_t i = 0; i < done; ++i) {
    if (mine[i].seal_no <= sealed_no_) continue;
    sealed_no_ = mine[i].seal_no;
    sealed_digest_ = mine[i].digest;
    advanced = true;
    if (sealed_no_ % 1000 == 0) {
      diagnostics()->info("auditpipe: {} sealed through seal {} digest {}", table_->name,
                          sealed_no_, sealed_digest_);
    }
  }
  if (advanced && !settings_.seal.anchor_file.empty()) {
    const std::string tmp = settings_.seal.anchor_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << sealed_no_ << ' ' << sealed_digest_ << '\n';
    }
    if (std::rename(tmp.c_str(), settings_.seal.anchor_file.c_str()) != 0) {
      diagnostics()->warn("auditpipe: cannot write seal anchor file {}",
                          settings_.seal.anchor_file);
    }
  }
}

void SqlSink::close() noexcept {
  if (settings_.seal.mode != seal::Mode::none && table_ != nullptr) {
    // Seals whose statement failed: one last try on an idle connection (no
    // write runs any more), so a clean shutdown leaves nothing unsealed.
    bool pending = false;
    {
      detail::MutexLock lock(seal_mutex_);
      pending = !pending_seals_.empty();
    }
    if (pending && !cancellation_.cancelled()) {
      try {
        if (pool_) {
          if (ConnectionPool::Lease lease = pool_->try_acquire()) {
            flush_seals(lease.as<LiveConnection>().connection());
          }
        } else {
          detail::MutexLock single(single_mutex_);
          if (single_) flush_seals(*single_);
        }
      } catch (const std::exception&) {
        // reported below, as still pending
      }
    }
    detail::MutexLock lock(seal_mutex_);
    if (sealed_no_ > 0) {
      diagnostics()->info("auditpipe: {} sealed through seal {} digest {}", table_->name,
                          sealed_no_, sealed_digest_);
    }
    if (!pending_seals_.empty()) {
      diagnostics()->warn(
          "auditpipe: {} seals of {} could not be stored: their rows are stored, not yet "
          "sealed (auditpipe verify reports them so)",
          pending_seals_.size(), table_->name);
    }
  }
  // No write runs any more: connects the pool's openers have in progress
  // stop now instead of at their connect_timeout; open connections close
  // as usual.
  if (pool_) pool_->cancel();
  cancellation_.cancel();
  pool_.reset();
  detail::MutexLock lock(single_mutex_);
  if (single_) remove_live(single_.get());
  single_.reset();
}

std::optional<ConnectionPoolStats> SqlSink::connection_pool_stats() const {
  if (!pool_) return std::nullopt;
  return pool_->stats();
}

std::vector<std::vector<std::optional<std::string>>> SqlConnection::query_rows(
    std::string_view, const std::vector<std::string>&) {
  throw error("auditpipe: connections to " + server() + " take no statements (query_rows)");
}

}  // namespace auditpipe
