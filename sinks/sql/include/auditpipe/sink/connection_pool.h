// ConnectionPool: database connections kept open and lent out, with
// HikariCP's semantics and names.
//
// What the pool exists to prevent (the incidents in docs/DESIGN.md):
// connections destroyed and re-created under load because the idle cap was
// below the active cap, every connect serialized behind one factory lock,
// and borrowers that wait forever when the database slows down. So:
//   - min_idle defaults to max_size: the pool keeps what it made;
//   - connections are opened by opener threads, outside the pool's lock and
//     several at once; a borrower waits for whichever connection frees up
//     or opens first, never behind a particular connect;
//   - every wait is bounded by connection_timeout, and cancel() ends every
//     wait at once (a sink whose close() ran out of time);
//   - a connection is validated (a cheap ping) only when it sat idle longer
//     than validation_threshold, not on every lease;
//   - idle connections above min_idle are closed after idle_timeout, every
//     connection is retired after max_lifetime (while idle), idle ones are
//     pinged every keepalive_interval, and a lease held longer than
//     leak_detection_threshold is reported with the place it was taken.
//
// The pool is generic: it holds PooledConnection objects made by a factory
// the sink supplies (the MySQL and PostgreSQL sinks' connections, through
// the SQL sink skeleton, sql_sink.h).
//
// Thread safety: acquire() from any thread; a Lease belongs to one thread.
// Every Lease must be gone before the pool is destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/export.h"
#include "auditpipe/histogram.h"
#include "auditpipe/sink/source_location.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"

namespace auditpipe {

/// A connection the pool can manage.
class AUDITPIPE_EXPORT PooledConnection {
 public:
  virtual ~PooledConnection() = default;
  /// A cheap liveness check (a protocol ping, not a query). False: the pool
  /// closes the connection and opens another.
  virtual bool ping() noexcept = 0;
  /// The server it is connected to, for ConnectionPoolStats::servers
  /// (cheap: no I/O; called under the pool's lock). Empty: not known.
  virtual std::string server() const { return {}; }
};

/// Thrown by a ConnectionPool::Factory for a server it reached but cannot
/// use (a table this sink cannot write): borrowers waiting in acquire() get
/// it at once, since no wait for another connect mends it, instead of at
/// connection_timeout with a stale reason.
class AUDITPIPE_EXPORT unusable_server : public error {
 public:
  using error::error;
};

/// A ConnectionPool's settings (HikariCP's names and defaults; README, Connection pool).
struct AUDITPIPE_EXPORT ConnectionPoolOptions {
  std::string name = "pool";  ///< in messages
  /// Connections at most.
  std::size_t max_size = 4;
  std::optional<std::size_t> min_idle;  ///< unset: max_size
  /// The longest acquire() waits for a connection.
  std::chrono::milliseconds connection_timeout{30000};
  std::chrono::milliseconds idle_timeout{600000};        ///< 0: never
  std::chrono::milliseconds max_lifetime{1800000};       ///< 0: unlimited
  std::chrono::milliseconds keepalive_interval{120000};  ///< 0: off
  /// A lease pings first only if the connection sat idle longer than this.
  std::chrono::milliseconds validation_threshold{500};
  std::chrono::milliseconds leak_detection_threshold{0};  ///< 0: off
  /// Connects in flight at once. 0: min(max_size, 4).
  unsigned opener_threads = 0;
};

/// A pool of connections made by a Factory, lent as Leases, with bounded waits, background openers,
/// keepalive, lifetimes and leak detection.
class AUDITPIPE_EXPORT ConnectionPool {
 public:
  /// The clock of deadlines.
  using clock = std::chrono::steady_clock;
  /// Opens one connection; throws (any std::exception) with a message that
  /// names the problem, unusable_server where waiting cannot help. Called
  /// from several opener threads at once.
  using Factory = std::function<std::unique_ptr<PooledConnection>()>;

 private:
  struct Entry;

 public:
  /// A lent connection; gives it back when destroyed.
  class Lease {
   public:
    Lease() = default;
    /// Takes over other's connection; other is left empty.
    Lease(Lease&& other) noexcept;
    /// Gives back the connection held, then takes over other's.
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();

    /// True while it holds a connection.
    explicit operator bool() const noexcept { return entry_ != nullptr; }
    /// The connection lent.
    PooledConnection& operator*() const noexcept;
    /// The connection lent.
    PooledConnection* operator->() const noexcept;
    /// The connection lent, as the sink's own type C (which the factory made).
    template <class C>
    C& as() const noexcept {
      return static_cast<C&>(**this);
    }
    /// The connection is broken (or in an unknown state): close it instead
    /// of lending it again.
    void invalidate() noexcept { invalid_ = true; }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Entry> entry) noexcept;
    void give_back() noexcept;

    ConnectionPool* pool_ = nullptr;
    std::unique_ptr<Entry> entry_;
    bool invalid_ = false;
  };

  /// Starts the opener and housekeeping threads, which open connections up
  /// to min_idle in the background. With `open_first`, one connection is
  /// opened on the calling thread before they start, and the factory's error
  /// is thrown from here: a sink then fails at start, with the database's
  /// own message, instead of at its first write. Throws auditpipe::error for
  /// bad options.
  ConnectionPool(Factory factory, ConnectionPoolOptions options, bool open_first = false);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  /// A connection, waiting at most connection_timeout. Throws
  /// auditpipe::error on timeout, naming the pool, how long it waited and
  /// the last connect error; unusable_server, with the factory's message,
  /// as soon as a connect fails so while it waits.
  Lease acquire(source_location where = source_location::current()) AUDITPIPE_EXCLUDES(mutex_);
  /// An idle connection if there is one now (validated as acquire()
  /// validates), else an empty Lease: no wait, and no timeout counted.
  /// Throws auditpipe::error once the pool is closed or cancelled.
  Lease try_acquire(source_location where = source_location::current()) AUDITPIPE_EXCLUDES(mutex_);

  /// Every borrower waiting in acquire() gets auditpipe::error now, and so
  /// does every acquire() and try_acquire() from here on; connections lent
  /// out stay theirs until given back. For a sink whose close() ran out of
  /// time (Sink::cancel); the pool is destroyed soon after. Connects that
  /// fail from then on are not reported (the owner cut them short).
  void cancel() AUDITPIPE_EXCLUDES(mutex_);

  /// Counts, gauges and the wait histogram.
  ConnectionPoolStats stats() const AUDITPIPE_EXCLUDES(mutex_);

 private:
  /// Stops and joins the threads started, closes the idle connections (the
  /// destructor; a constructor that could not start a thread).
  void shut_down() noexcept AUDITPIPE_EXCLUDES(mutex_);
  struct Entry {
    std::unique_ptr<PooledConnection> connection;
    clock::time_point created;
    clock::time_point retire_at;  ///< created + max_lifetime (minus jitter)
    clock::time_point last_used;
    clock::time_point leased_at;
    source_location leased_where;
    bool leak_reported = false;
  };

  std::unique_ptr<Entry> make_entry(std::unique_ptr<PooledConnection> connection);
  /// acquire() and try_acquire(): with `wait`, up to connection_timeout.
  Lease take(source_location where, bool wait) AUDITPIPE_EXCLUDES(mutex_);
  /// Connections wanted open now: min_idle, or more while borrowers wait.
  std::size_t wanted_locked() const noexcept AUDITPIPE_REQUIRES(mutex_);
  void opener_loop() AUDITPIPE_EXCLUDES(mutex_);
  void housekeeper_loop() AUDITPIPE_EXCLUDES(mutex_);
  void give_back(std::unique_ptr<Entry> entry, bool invalid) noexcept AUDITPIPE_EXCLUDES(mutex_);
  /// Closing may do I/O (a goodbye to the server): never under the lock.
  void close_entries(std::vector<std::unique_ptr<Entry>> entries) noexcept
      AUDITPIPE_EXCLUDES(mutex_);
  /// Closes and counts in stats().closed; takes the lock.
  void retire_entries(std::vector<std::unique_ptr<Entry>> entries) noexcept
      AUDITPIPE_EXCLUDES(mutex_);
  void forget_locked(const Entry* entry) noexcept AUDITPIPE_REQUIRES(mutex_);

  const Factory factory_;
  const ConnectionPoolOptions options_;
  const std::size_t min_idle_;

  /// Entries (and their fields) belong to whoever holds them: the idle
  /// queue under the lock, a Lease, or an opener or the housekeeper between
  /// taking one out and putting it back.
  mutable detail::Mutex mutex_;
  detail::CondVar available_cv_;  ///< borrowers: a connection was added or returned
  detail::CondVar work_cv_;       ///< openers and housekeeper: something changed
  bool closing_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  bool cancelled_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  /// Most recently returned at the back.
  std::deque<std::unique_ptr<Entry>> idle_ AUDITPIPE_GUARDED_BY(mutex_);
  std::vector<Entry*> leased_ AUDITPIPE_GUARDED_BY(mutex_);  ///< for leak detection
  std::size_t total_ AUDITPIPE_GUARDED_BY(mutex_) = 0;       ///< idle + leased + opening
  std::size_t opening_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::size_t waiting_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  /// Backoff after a failed connect.
  clock::time_point next_connect_ AUDITPIPE_GUARDED_BY(mutex_) = {};
  std::chrono::milliseconds connect_backoff_ AUDITPIPE_GUARDED_BY(mutex_){0};
  std::uint64_t created_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t closed_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t timeouts_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t connect_failures_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  /// Connects that failed with unusable_server: a waiting borrower that
  /// sees this move stops waiting.
  std::uint64_t unusable_connects_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t validations_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::uint64_t leaks_reported_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::string last_connect_error_ AUDITPIPE_GUARDED_BY(mutex_);
  Histogram wait_ns_;  ///< thread-safe on its own: recorded outside the lock

  std::vector<std::thread> openers_;
  std::thread housekeeper_;
};

}  // namespace auditpipe
