// The SQL sink skeleton (auditpipe/sink/sql_sink.h): open, the table
// prepared on every server, the write loop, cancel, close. The sinks
// derived from it supply connections and write paths.
#include "auditpipe/sink/sql_sink.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <new>
#include <system_error>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "digest_thread.h"
#include "seal_writer.h"
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
void SqlSink::check_before_changes(SqlConnection&) {}
void SqlSink::prepare_writes(SqlConnection&) {}

void SqlSink::open(const TableDescriptor& table, const SinkContext& context) {
  table_ = &table;
  fixed_sources_first_ = context.fixed_sources_first;
  fixed_sources_count_ = context.fixed_sources_count;
  durable_pool_ = context.durable_pool;
  text_ = sql_table_text(dialect_, table);
  // The sinks' URL parsers refuse these first; settings made in code meet them here.
  if (const auto why = seal::contradiction(settings_.seal, settings_.migrate_add_columns)) {
    throw url_error("auditpipe: " + settings_.redacted_url + ": " + *why);
  }
  check_name_lengths();
  if (settings_.seal.mode != seal::Mode::none) {
    sealer_ =
        std::make_unique<SealWriter>(dialect_, settings_.seal, table, settings_.table_location);
    sealer_->expect_recovered(context.recovered);
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
      if (!settings_.single_connection && context.starts_while_unreachable)
        open_pool(context, false);
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

// A name longer than the database keeps: PostgreSQL cut it silently, so
// the first start made a column the table check then did not find, and
// every later start failed; MySQL refused a long seals table's name with
// its bare error.
void SqlSink::check_name_lengths() const {
  const std::size_t longest = dialect_.max_identifier_bytes;
  if (longest == 0) return;
  const auto check = [&](const char* what, std::string_view name) {
    if (name.size() <= longest) return;
    throw error("auditpipe: table " + std::string(table_->name) + " " + settings_.table_location +
                ": " + what + " '" + std::string(name) + "' is " + std::to_string(name.size()) +
                " bytes, and " + std::string(dialect_.name) + " keeps names of at most " +
                std::to_string(longest) + " bytes");
  };
  check("the table name", table_->name);
  for (const Column& c : table_->columns) check("the column name", c.name);
  if (settings_.seal.mode != seal::Mode::none) {
    check("with seal=, the seals table's name", seal::seals_table(table_->name));
    check("with seal=, the table of rows left unsealed's name", seal::unsealed_table(table_->name));
  }
}

void SqlSink::prepare_table(SqlConnection& c) {
  const std::string server = c.server();
  detail::MutexLock lock(table_mutex_);
  if (prepared_servers_.count(server) == 0) {
    sql_detail::create_or_check_table(c, dialect_, text_, *table_, settings_,
                                      [&](bool table_exists) AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
                                        // Under table_mutex_ (the lambda runs inside this call).
                                        refuse_before_changes(c, table_exists);
                                      });
    prepared_servers_.insert(server);
  }
  if (!table_ready_done_) {
    if (sealer_) sealer_->prepare(c, settings_.create_table);
    table_ready(c);
    table_ready_done_ = true;
  }
}

void SqlSink::check_table_again(SqlConnection& c) const {
  SqlSinkSettings check_only = settings_;
  check_only.create_table = false;
  check_only.migrate_add_columns = false;
  sql_detail::create_or_check_table(c, dialect_, text_, *table_, check_only, [](bool) {});
}

void SqlSink::refuse_before_changes(SqlConnection& c, bool table_exists) {
  if (table_ready_done_) return;
  if (table_exists) refuse_reused_sources(c);
  if (!sealer_) refuse_unsealed_writes_to_sealed_table(c);
  if (table_exists) check_before_changes(c);
}

void SqlSink::refuse_reused_sources(SqlConnection& c) {
  if (fixed_sources_count_ <= 0) return;
  const std::int64_t first = fixed_sources_first_;
  const std::int64_t end = first + fixed_sources_count_;
  const auto rows =
      c.query_rows("SELECT " + dialect_.quote(source_id_column) + " FROM " +
                       dialect_.quote(table_->name) + " WHERE " + dialect_.quote(source_id_column) +
                       " >= ? AND " + dialect_.quote(source_id_column) + " < ? LIMIT 1",
                   {std::to_string(first), std::to_string(end)});
  if (rows.empty()) return;
  throw error("auditpipe: " + std::string(table_->name) + " " + settings_.table_location +
              " holds rows of source " + rows[0][0].value_or("?") +
              ", one of the sources Options::source_id_base " + std::to_string(first) +
              " gives this logger: a start without the durable pool file of the run that "
              "stored them (no durable_path, or a new file) numbers its sources' records from "
              "seq 0 again, and the table would skip them as repeats of those rows. Leave "
              "source_id_base unset (a random base per start), or keep the logger's durable "
              "pool file from run to run: it goes on with its sources' numbering");
}

void SqlSink::refuse_unsealed_writes_to_sealed_table(SqlConnection& c) {
  const std::string seals = seal::seals_table(table_->name);
  std::vector<std::vector<std::optional<std::string>>> rows;
  try {
    rows = c.query_rows("SELECT seal_no FROM " + dialect_.quote(seals) + " LIMIT 1", {});
  } catch (const std::exception&) {
    return;  // no seals table (or none this account may read): not sealed here
  }
  if (rows.empty()) return;
  throw error("auditpipe: " + std::string(table_->name) + " " + settings_.table_location +
              " is sealed (" + seals +
              " holds its seals), and this logger does not seal: open it with the seal= (and "
              "key) it is sealed with. Rows stored without seals are what verify reports as "
              "not yet sealed, for good. (To stop sealing the table, drop " +
              seals + " and " + seal::unsealed_table(table_->name) + " first.)");
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
  // With seal=, one more than the writers: the seals' own (sealer_'s
  // storer thread), so that a writer never waits for a seal's statement.
  pool.max_size = settings_.pool_size.value_or(std::max(1u, context.writers) + (sealer_ ? 1u : 0u));
  pool_ = std::make_unique<ConnectionPool>([this] { return open_pooled(); }, pool, open_first);
  if (sealer_) {
    sealer_->start_storer([this](const std::function<bool(SqlConnection&)>& store) {
      ConnectionPool::Lease lease = pool_->try_acquire();
      if (!lease) return false;
      SqlConnection& c = lease.as<LiveConnection>().connection();
      // A connection that fails a statement and a ping is closed, not lent again.
      if (!store(c) && !c.ping()) lease.invalidate();
      return true;
    });
  }
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
      throw unusable_server(message);
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

namespace {

// A failed write saying what `e` says, or "out of memory" when even the
// message cannot be copied (often the failure itself): a message that fits
// the string's own buffer needs no allocation.
WriteResult failure_of(const std::exception& e, bool permanent) noexcept {
  try {
    return permanent ? WriteResult::permanent_error(e.what())
                     : WriteResult::transient_error(e.what());
  } catch (const std::bad_alloc&) {
    return permanent ? WriteResult::permanent_error("out of memory")
                     : WriteResult::transient_error("out of memory");
  }
}

}  // namespace

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
    return write_on(lease.as<LiveConnection>().connection(), batch, &lease);
  } catch (const unusable_server& e) {
    return failure_of(e, true);
  } catch (const std::exception& e) {
    return failure_of(e, false);
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
  return write_on(*c, batch, nullptr);
}

WriteResult SqlSink::write_on(SqlConnection& c, const Batch& batch, ConnectionPool::Lease* lease) {
  if (sealer_) {
    if (std::optional<std::string> held = sealer_->backlog(c)) {
      return WriteResult::transient_error(std::move(*held));
    }
  }
  if (!sealer_) return result_of(write_batch(c, batch), lease);
  if (batch.replayed) sealer_->keep_replayed(c, batch);
  // The batch is digested on another thread while its statement runs, so
  // that sealing adds no time to the writer's turn around the database.
  // The digest is waited for before the batch's records can go (also when
  // write_batch throws).
  SealWriter::BatchSeal digested;
  struct Digesting {
    SealWriter& sealer;
    std::unique_ptr<DigestThread> thread;
    ~Digesting() {
      if (!thread) return;
      thread->wait();
      sealer.give_back(std::move(thread));
    }
  } digesting{*sealer_, sealer_->take_digest_thread()};
  if (digesting.thread) digesting.thread->begin(batch);
  c.skipped_rows = false;
  std::optional<WriteFailure> failure = write_batch(c, batch);
  std::optional<std::string> unsealed;
  try {
    digested = digesting.thread ? digesting.thread->finish() : sealer_->digest(batch);
    if (!failure && c.skipped_rows) {
      // Some keys were there already: sealed as the table holds them, but
      // only where it holds what this batch sent. A failed read leaves the
      // batch to be written again (its rows all skipped then) and read
      // once more.
      SealWriter::StoredSeal stored;
      try {
        stored = sealer_->digest_stored(c, batch, digested);
      } catch (const std::exception& e) {
        if (lease != nullptr && !c.ping()) lease->invalidate();
        return WriteResult::transient_error("auditpipe: " + std::string(table_->name) +
                                            ": rows stored, some kept from before; reading "
                                            "them back to seal them failed (under seal= the "
                                            "writer needs SELECT on the table): " +
                                            e.what());
      }
      if (stored.missing > 0) {
        // Counted as stored by the statement, yet not there (a trigger or
        // rule that drops rows): refused, one by one, as MySQL's check does.
        failure = WriteFailure{WriteFailure::Kind::data,
                               std::to_string(stored.missing) +
                                   " rows of the batch are not in the table after its statement "
                                   "(a trigger or rule dropped them?)"};
      } else {
        if (stored.kept > 0) {
          diagnostics()->warn(
              "auditpipe: {}: {} rows were given under keys the table held already with other "
              "values; the rows stored first stay, and this batch's seal leaves them to theirs",
              table_->name, stored.kept);
        }
        digested = std::move(stored.seal);
      }
    }
    if (!failure && digested.row_count == 0) {
      // Every key held other values already: nothing of this batch's to seal.
      if (batch.replayed) sealer_->settle_replayed(c, batch);
    } else if (!failure) {
      const std::uint64_t ticket = sealer_->seal(c, std::move(digested));
      // A durable pool keeps the records until this returns ok, and writes
      // them again after a crash: ok only once their seal is stored, so that
      // a crash never leaves stored rows that no start will seal. A
      // replayed batch's keys stay noted until its seal is stored.
      if (durable_pool_ || batch.replayed) unsealed = sealer_->stored_by(c, ticket);
      if (batch.replayed && !unsealed) sealer_->settle_replayed(c, batch);
    }
  } catch (const std::exception& e) {
    diagnostics()->warn("auditpipe: sealing a batch of {} failed: {}", table_->name, e.what());
  }
  if (batch.replayed && failure && failure->kind == WriteFailure::Kind::data &&
      batch.records.size() == 1) {
    // Refused, so never stored: its note need not wait for it.
    sealer_->settle_replayed(c, batch);
  }
  if (unsealed) {
    // Written again: its rows are skipped by their keys, and sealed again
    // (a verifier accepts a batch sealed twice).
    return WriteResult::transient_error("auditpipe: " + std::string(table_->name) +
                                        ": rows stored, their seal not yet: " + *unsealed);
  }
  return result_of(std::move(failure), lease);
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

void SqlSink::close() noexcept {
  if (sealer_) {
    sealer_->stop_storer();
    // Seals whose statement failed: one last try on an idle connection (no
    // write runs any more), so a clean shutdown leaves nothing unsealed.
    SqlConnection* idle = nullptr;
    ConnectionPool::Lease lease;
    try {
      if (!cancellation_.cancelled() && pool_) {
        lease = pool_->try_acquire();
        if (lease) idle = &lease.as<LiveConnection>().connection();
      }
    } catch (const std::exception&) {
      // no idle connection: what is pending is reported as such
    }
    if (pool_ || cancellation_.cancelled()) {
      sealer_->close(idle);
    } else {
      detail::MutexLock single(single_mutex_);
      sealer_->close(single_.get());
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

SqlSink::~SqlSink() {
  // Its thread borrows from pool_, which goes first.
  if (sealer_) sealer_->stop_storer();
}

std::optional<SealStats> SqlSink::seal_stats() const {
  if (!sealer_) return std::nullopt;
  return sealer_->stats();
}

std::optional<ConnectionPoolStats> SqlSink::connection_pool_stats() const {
  if (!pool_) return std::nullopt;
  return pool_->stats();
}

std::vector<std::vector<std::optional<std::string>>> SqlConnection::query_rows(
    std::string_view, const std::vector<std::string>&) {
  throw error("auditpipe: connections to " + server() + " take no statements (query_rows)");
}

void SqlConnection::query_each(std::string_view sql, const std::vector<std::string>& params,
                               const RowCallback& on_row) {
  std::vector<std::optional<std::string_view>> views;
  for (const auto& row : query_rows(sql, params)) {
    views.clear();
    for (const auto& v : row)
      views.emplace_back(v ? std::optional<std::string_view>(*v) : std::nullopt);
    on_row(views);
  }
}

}  // namespace auditpipe
