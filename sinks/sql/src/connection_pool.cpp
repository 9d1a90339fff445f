// ConnectionPool (auditpipe/sink/connection_pool.h): leases, the opener
// threads, the housekeeper, and cancel().
#include "auditpipe/sink/connection_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <new>
#include <random>
#include <string>

#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "common/start_thread.h"

namespace auditpipe {

namespace {

using std::chrono::milliseconds;

// A MutexLock that can let go of the mutex and take it again, for the
// loops that connect, ping or close with the lock released; it lets go at
// the end of its scope if it holds the mutex then, an exception included.
class AUDITPIPE_SCOPED_CAPABILITY RelockableLock {
 public:
  explicit RelockableLock(detail::Mutex& m) AUDITPIPE_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~RelockableLock() AUDITPIPE_RELEASE() {
    if (held_) m_.unlock();
  }
  RelockableLock(const RelockableLock&) = delete;
  RelockableLock& operator=(const RelockableLock&) = delete;

  void lock() AUDITPIPE_ACQUIRE() {
    m_.lock();
    held_ = true;
  }
  void unlock() AUDITPIPE_RELEASE() {
    held_ = false;
    m_.unlock();
  }

 private:
  detail::Mutex& m_;
  bool held_ = true;
};

long long ms(ConnectionPool::clock::duration d) {
  return std::chrono::duration_cast<milliseconds>(d).count();
}

// How often the housekeeper looks: often enough for the shortest of the
// timeouts it enforces, at most once a second.
milliseconds housekeeping_period(const ConnectionPoolOptions& o) {
  milliseconds period{1000};
  for (milliseconds t :
       {o.idle_timeout, o.max_lifetime, o.keepalive_interval, o.leak_detection_threshold}) {
    if (t.count() > 0) period = std::min(period, t / 4);
  }
  return std::max(period, milliseconds{10});
}

}  // namespace

// Lease -------------------------------------------------------------------

ConnectionPool::Lease::Lease(ConnectionPool* pool, std::unique_ptr<Entry> entry) noexcept
    : pool_(pool), entry_(std::move(entry)) {}

ConnectionPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), entry_(std::move(other.entry_)), invalid_(other.invalid_) {}

ConnectionPool::Lease& ConnectionPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = other.pool_;
    entry_ = std::move(other.entry_);
    invalid_ = other.invalid_;
  }
  return *this;
}

ConnectionPool::Lease::~Lease() {
  give_back();
}

PooledConnection& ConnectionPool::Lease::operator*() const noexcept {
  return *entry_->connection;
}
PooledConnection* ConnectionPool::Lease::operator->() const noexcept {
  return entry_->connection.get();
}

void ConnectionPool::Lease::give_back() noexcept {
  if (entry_) pool_->give_back(std::move(entry_), invalid_);
  invalid_ = false;
}

// Pool --------------------------------------------------------------------

ConnectionPool::ConnectionPool(Factory factory, ConnectionPoolOptions options, bool open_first)
    : factory_(std::move(factory)),
      options_(std::move(options)),
      min_idle_(std::min(options_.min_idle.value_or(options_.max_size), options_.max_size)) {
  if (!factory_) throw error("auditpipe: connection pool '" + options_.name + "' has no factory");
  if (options_.max_size == 0) {
    throw error("auditpipe: connection pool '" + options_.name + "': max_size must be at least 1");
  }
  if (options_.connection_timeout.count() <= 0) {
    throw error("auditpipe: connection pool '" + options_.name +
                "': connection_timeout must be positive (a wait without a bound is how a slow "
                "database stalls every thread)");
  }
  if (open_first) {
    std::unique_ptr<PooledConnection> connection = factory_();  // throws: nothing started yet
    if (!connection) throw error("auditpipe: the connection factory returned no connection");
    idle_.push_back(make_entry(std::move(connection)));
    total_ = 1;
    created_ = 1;
  }
  const unsigned openers = options_.opener_threads != 0
                               ? options_.opener_threads
                               : static_cast<unsigned>(std::min<std::size_t>(options_.max_size, 4));
  try {
    openers_.reserve(openers);  // a push_back that threw would drop a joinable thread
    for (unsigned i = 0; i < openers; ++i)
      openers_.push_back(
          internal::start_thread("a connection opener thread", [this] { opener_loop(); }));
    housekeeper_ = internal::start_thread("the connection pool's housekeeping thread",
                                          [this] { housekeeper_loop(); });
  } catch (...) {
    shut_down();  // the threads started before, and the first connection
    throw;
  }
}

ConnectionPool::~ConnectionPool() {
  shut_down();
}

void ConnectionPool::shut_down() noexcept {
  {
    detail::MutexLock lock(mutex_);
    closing_ = true;
  }
  work_cv_.notify_all();
  available_cv_.notify_all();
  for (auto& t : openers_) t.join();
  if (housekeeper_.joinable()) housekeeper_.join();
  std::vector<std::unique_ptr<Entry>> rest;
  {
    detail::MutexLock lock(mutex_);
    for (auto& e : idle_) rest.push_back(std::move(e));
    idle_.clear();
  }
  close_entries(std::move(rest));
}

std::unique_ptr<ConnectionPool::Entry> ConnectionPool::make_entry(
    std::unique_ptr<PooledConnection> connection) {
  auto e = std::make_unique<Entry>();
  e->connection = std::move(connection);
  e->created = clock::now();
  e->last_used = e->created;
  if (options_.max_lifetime.count() > 0) {
    // Up to 2.5% earlier, so connections opened together do not all retire
    // together.
    thread_local std::minstd_rand rng{std::random_device{}()};
    const auto lifetime = std::chrono::duration_cast<clock::duration>(options_.max_lifetime);
    std::uniform_int_distribution<clock::rep> jitter(0, lifetime.count() / 40);
    e->retire_at = e->created + lifetime - clock::duration(jitter(rng));
  } else {
    e->retire_at = clock::time_point::max();
  }
  return e;
}

std::size_t ConnectionPool::wanted_locked() const noexcept {
  return std::min(options_.max_size, std::max(min_idle_, leased_.size() + waiting_));
}

ConnectionPool::Lease ConnectionPool::acquire(source_location where) {
  return take(where, true);
}

ConnectionPool::Lease ConnectionPool::try_acquire(source_location where) {
  return take(where, false);
}

void ConnectionPool::cancel() {
  {
    detail::MutexLock lock(mutex_);
    cancelled_ = true;
  }
  available_cv_.notify_all();
}

ConnectionPool::Lease ConnectionPool::take(source_location where, bool wait) {
  const auto t0 = clock::now();
  const auto deadline = t0 + options_.connection_timeout;
  RelockableLock lock(mutex_);
  ++waiting_;
  work_cv_.notify_all();  // openers: demand may have grown
  const std::uint64_t unusable_before = unusable_connects_;
  while (true) {
    if (closing_ || cancelled_) {
      --waiting_;
      throw error("auditpipe: connection pool '" + options_.name + "' is " +
                  (closing_ ? "closed" : "cancelled (close() ran out of time)"));
    }
    if (!idle_.empty()) {
      std::unique_ptr<Entry> entry = std::move(idle_.back());
      idle_.pop_back();
      --waiting_;
      const auto now = clock::now();
      entry->leased_at = now;
      entry->leased_where = where;
      entry->leak_reported = false;
      leased_.push_back(entry.get());
      const bool validate = now - entry->last_used > options_.validation_threshold;
      if (validate) ++validations_;
      lock.unlock();
      if (validate && !entry->connection->ping()) {
        give_back(std::move(entry), true);
        lock.lock();
        ++waiting_;
        continue;
      }
      wait_ns_.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count()));
      return Lease(this, std::move(entry));
    }
    if (!wait) {
      --waiting_;
      return Lease();
    }
    if (unusable_connects_ != unusable_before) {
      --waiting_;
      throw unusable_server(last_connect_error_);
    }
    if (available_cv_.wait_until(mutex_, deadline) == std::cv_status::timeout && idle_.empty() &&
        !cancelled_ && !closing_) {
      --waiting_;
      ++timeouts_;
      std::string message = "auditpipe: timed out after " + std::to_string(ms(clock::now() - t0)) +
                            " ms waiting for a connection from pool '" + options_.name + "' (" +
                            std::to_string(leased_.size()) + " in use, " +
                            std::to_string(opening_) + " opening, max_size " +
                            std::to_string(options_.max_size) + ")";
      if (!last_connect_error_.empty()) message += "; last connect error: " + last_connect_error_;
      lock.unlock();
      wait_ns_.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count()));
      throw error(message);
    }
  }
}

void ConnectionPool::opener_loop() {
  internal::mark_internal_thread();
  RelockableLock lock(mutex_);
  while (!closing_) {
    const auto now = clock::now();
    if (total_ < wanted_locked() && now >= next_connect_) {
      ++total_;
      ++opening_;
      lock.unlock();
      // The connect happens here, with no lock held: borrowers keep being
      // served from returned connections, and other openers connect too.
      std::unique_ptr<PooledConnection> connection;
      std::string failure;
      bool unusable = false;
      try {
        connection = factory_();
        if (!connection) failure = "the connection factory returned no connection";
      } catch (const unusable_server& e) {
        failure = e.what();
        unusable = true;
      } catch (const std::exception& e) {
        failure = e.what();
      } catch (...) {
        failure = "unknown error";
      }
      std::unique_ptr<Entry> entry = connection ? make_entry(std::move(connection)) : nullptr;
      std::vector<std::unique_ptr<Entry>> discard;
      lock.lock();
      --opening_;
      if (entry && !closing_) {
        ++created_;
        connect_backoff_ = milliseconds{0};
        last_connect_error_.clear();  // stats() and health say what fails now
        idle_.push_back(std::move(entry));
        available_cv_.notify_one();
      } else if (entry) {
        --total_;
        discard.push_back(std::move(entry));
      } else {
        --total_;
        ++connect_failures_;
        last_connect_error_ = failure;
        if (unusable) {
          ++unusable_connects_;
          available_cv_.notify_all();
        }
        // Back off so a database that is down is not hammered (a few
        // openers retrying in a tight loop would be).
        connect_backoff_ = std::clamp(connect_backoff_ * 2, milliseconds{100}, milliseconds{5000});
        next_connect_ = clock::now() + connect_backoff_;
        // Not for a connect cut short by the owner's cancel: it was meant.
        if (!cancelled_) {
          diagnostics()->warn("auditpipe: pool '{}': connect failed (retrying in {} ms): {}",
                              options_.name, connect_backoff_.count(), failure);
        }
      }
      if (!discard.empty()) {
        lock.unlock();
        close_entries(std::move(discard));
        lock.lock();
      }
      continue;
    }
    if (total_ < wanted_locked()) {
      work_cv_.wait_until(mutex_, next_connect_);
    } else {
      work_cv_.wait(mutex_);
    }
  }
}

void ConnectionPool::give_back(std::unique_ptr<Entry> entry, bool invalid) noexcept {
  // What is closed is closed once the lock is let go (a goodbye to the
  // server is I/O). Nothing here may allocate but the idle list's growth,
  // whose failure (out of memory) leaves the entry as it was: closed then
  // instead of kept, where an exception would end the process.
  bool kept = false;
  {
    detail::MutexLock lock(mutex_);
    forget_locked(entry.get());
    const auto now = clock::now();
    if (!invalid && !closing_ && now < entry->retire_at) {
      entry->last_used = now;
      try {
        idle_.push_back(std::move(entry));
        kept = true;
        available_cv_.notify_one();
      } catch (const std::bad_alloc&) {  // push_back changed nothing
      }
    }
    if (!kept) {
      --total_;
      work_cv_.notify_all();  // openers: replace it
    }
  }
  if (kept) return;
  entry.reset();
  // Counted once closed, as retire_entries() counts.
  detail::MutexLock lock(mutex_);
  ++closed_;
}

void ConnectionPool::forget_locked(const Entry* entry) noexcept {
  auto it = std::find(leased_.begin(), leased_.end(), entry);
  if (it != leased_.end()) leased_.erase(it);
}

void ConnectionPool::close_entries(std::vector<std::unique_ptr<Entry>> entries) noexcept {
  // Closing a connection may do I/O (a goodbye to the server): never under
  // the pool's lock.
  entries.clear();
}

void ConnectionPool::retire_entries(std::vector<std::unique_ptr<Entry>> entries) noexcept {
  if (entries.empty()) return;
  const std::size_t n = entries.size();
  close_entries(std::move(entries));
  // Counted once closed, so `closed` never runs ahead of what the server saw.
  detail::MutexLock lock(mutex_);
  closed_ += n;
}

void ConnectionPool::housekeeper_loop() {
  internal::mark_internal_thread();
  const milliseconds period = housekeeping_period(options_);
  RelockableLock lock(mutex_);
  while (!closing_) {
    work_cv_.wait_until(mutex_, clock::now() + period);
    if (closing_) break;
    const auto now = clock::now();
    std::vector<std::unique_ptr<Entry>> to_close, to_ping;
    for (auto it = idle_.begin(); it != idle_.end();) {
      Entry& e = **it;
      const bool retired = now >= e.retire_at;
      const bool idle_too_long = options_.idle_timeout.count() > 0 &&
                                 now - e.last_used >= options_.idle_timeout && total_ > min_idle_;
      const bool keepalive = options_.keepalive_interval.count() > 0 &&
                             now - e.last_used >= options_.keepalive_interval;
      if (retired || idle_too_long) {
        --total_;
        to_close.push_back(std::move(*it));
        it = idle_.erase(it);
      } else if (keepalive) {
        to_ping.push_back(std::move(*it));  // still counted in total_
        it = idle_.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<std::string> leaks;
    if (options_.leak_detection_threshold.count() > 0) {
      for (Entry* e : leased_) {
        if (!e->leak_reported && now - e->leased_at > options_.leak_detection_threshold) {
          e->leak_reported = true;
          ++leaks_reported_;
          leaks.push_back("auditpipe: pool '" + options_.name + "': a connection leased " +
                          std::to_string(ms(now - e->leased_at)) + " ms ago at " +
                          e->leased_where.file_name() + ":" +
                          std::to_string(e->leased_where.line()) + " (" +
                          e->leased_where.function_name() +
                          ") has not been returned (leak_detection_threshold " +
                          std::to_string(options_.leak_detection_threshold.count()) + " ms)");
        }
      }
    }
    if (!to_close.empty()) work_cv_.notify_all();
    lock.unlock();
    retire_entries(std::move(to_close));
    for (const auto& message : leaks) diagnostics()->warn("{}", message);
    std::vector<std::unique_ptr<Entry>> alive, dead;
    for (auto& e : to_ping) {
      if (e->connection->ping()) {
        e->last_used = clock::now();
        alive.push_back(std::move(e));
      } else {
        dead.push_back(std::move(e));
      }
    }
    lock.lock();
    for (auto& e : alive) {
      idle_.push_front(std::move(e));  // least recently used end
      available_cv_.notify_one();
    }
    if (!dead.empty()) {
      total_ -= dead.size();
      work_cv_.notify_all();
      lock.unlock();
      retire_entries(std::move(dead));
      lock.lock();
    }
  }
}

ConnectionPoolStats ConnectionPool::stats() const {
  detail::MutexLock lock(mutex_);
  ConnectionPoolStats s;
  s.active = leased_.size();
  s.idle = idle_.size();
  s.waiting = waiting_;
  s.opening = opening_;
  s.created = created_;
  s.closed = closed_;
  s.timeouts = timeouts_;
  s.connect_failures = connect_failures_;
  s.validations = validations_;
  s.leaks_reported = leaks_reported_;
  s.wait_ns = wait_ns_.snapshot();
  s.last_connect_error = last_connect_error_;
  for (const auto& e : idle_) s.servers.push_back(e->connection->server());
  for (const Entry* e : leased_) s.servers.push_back(e->connection->server());
  std::sort(s.servers.begin(), s.servers.end());
  return s;
}

}  // namespace auditpipe
