// ConnectionPool against fake connections: bounded waits, parallel connects
// outside any lock, keeping what it made, idle eviction, lifetime,
// validation only after idleness, leak reports.
#include "auditpipe/sink/connection_pool.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "address_limit.h"
#include "auditpipe/diagnostics.h"
#include "auditpipe/status.h"
#include "eventually.h"
#include "multithreaded_fork.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::ConnectionPool;
using auditpipe::ConnectionPoolOptions;
using Clock = std::chrono::steady_clock;
using testing_support::eventually;

// Counts what the pool does to its connections.
struct Tally {
  std::atomic<int> opened{0};
  std::atomic<int> closed{0};
  std::atomic<int> pings{0};
  std::atomic<int> connecting{0};
  std::atomic<int> most_connecting{0};
  std::atomic<int> pings_to_fail{0};  // the next this many pings fail
};

class FakeConnection : public auditpipe::PooledConnection {
 public:
  FakeConnection(Tally& t, int id) : tally_(t), id_(id) { ++tally_.opened; }
  ~FakeConnection() override { ++tally_.closed; }
  bool ping() noexcept override {
    ++tally_.pings;
    int left = tally_.pings_to_fail.load();
    while (left > 0 && !tally_.pings_to_fail.compare_exchange_weak(left, left - 1)) {
    }
    return left <= 0;
  }
  int id() const { return id_; }

 private:
  Tally& tally_;
  int id_;
};

// A factory that takes `delay` per connect and records how many connects
// were in flight at once.
ConnectionPool::Factory slow_factory(Tally& t, std::chrono::milliseconds delay) {
  return [&t, delay] {
    const int now = ++t.connecting;
    int seen = t.most_connecting.load();
    while (now > seen && !t.most_connecting.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(delay);
    --t.connecting;
    return std::make_unique<FakeConnection>(t, t.opened.load());
  };
}

TEST(ConnectionPool, KeepsWhatItMadeByDefault) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 5;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  EXPECT_TRUE(eventually([&] { return pool.stats().idle == 5; }));
  {
    std::vector<ConnectionPool::Lease> leases;
    for (int i = 0; i < 5; ++i) leases.push_back(pool.acquire());
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(pool.stats().idle, 5u);
  EXPECT_EQ(t.opened.load(), 5);  // returned connections are kept, not re-created
  EXPECT_EQ(pool.stats().closed, 0u);
}

TEST(ConnectionPool, WaitIsBoundedByConnectionTimeout) {
  Tally t;
  ConnectionPoolOptions o;
  o.name = "bounded";
  o.max_size = 2;
  o.connection_timeout = 100ms;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  // Both open first (min_idle = max_size), so only the third lease waits.
  ASSERT_TRUE(eventually([&] { return pool.stats().idle == 2; }));
  auto a = pool.acquire();
  auto b = pool.acquire();
  const auto t0 = Clock::now();
  try {
    auto c = pool.acquire();
    FAIL() << "expected a timeout";
  } catch (const auditpipe::error& e) {
    const auto waited = Clock::now() - t0;
    EXPECT_GE(waited, 100ms);
    EXPECT_LT(waited, 5s);  // generous: only "bounded" is asserted
    EXPECT_NE(std::string(e.what()).find("pool 'bounded'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pool.stats().timeouts, 1u);
}

TEST(ConnectionPool, SlowConnectsHappenInParallelWithManyBorrowers) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 8;
  o.min_idle = 0;
  o.connection_timeout = 30s;
  ConnectionPool pool(slow_factory(t, 200ms), o);
  std::vector<std::thread> threads;
  std::atomic<int> served{0};
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&] {
      auto lease = pool.acquire();
      std::this_thread::sleep_for(2ms);
      ++served;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(served.load(), 64);
  EXPECT_GE(t.most_connecting.load(), 2);  // several connects at once
  EXPECT_LE(t.opened.load(), 8);
}

TEST(ConnectionPool, AReturnedConnectionIsLentWhileAConnectIsStuck) {
  Tally t;
  std::mutex m;
  std::condition_variable cv;
  bool release_connect = false;
  std::atomic<int> calls{0};
  ConnectionPoolOptions o;
  o.max_size = 2;
  o.min_idle = 0;
  o.connection_timeout = 30s;
  ConnectionPool pool(
      [&]() -> std::unique_ptr<auditpipe::PooledConnection> {
        if (++calls > 1) {  // the second connect hangs until told
          std::unique_lock<std::mutex> lock(m);
          cv.wait(lock, [&] { return release_connect; });
        }
        return std::make_unique<FakeConnection>(t, calls.load());
      },
      o);
  auto first = pool.acquire();
  std::atomic<bool> second_served{false};
  std::thread borrower([&] {
    auto lease = pool.acquire();  // demand > 1: an opener starts the stuck connect
    second_served = true;
  });
  ASSERT_TRUE(eventually([&] { return calls.load() >= 2; }));
  first = ConnectionPool::Lease();  // give the first connection back
  EXPECT_TRUE(eventually([&] { return second_served.load(); }, 5s))
      << "the borrower waited behind a connect instead of taking the returned connection";
  borrower.join();
  {
    std::lock_guard<std::mutex> lock(m);
    release_connect = true;
  }
  cv.notify_all();
}

TEST(ConnectionPool, IdleConnectionsAboveMinIdleAreClosed) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 4;
  o.min_idle = 1;
  o.idle_timeout = 100ms;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  {
    std::vector<ConnectionPool::Lease> leases;
    for (int i = 0; i < 4; ++i) leases.push_back(pool.acquire());
  }
  EXPECT_EQ(pool.stats().created, 4u);
  EXPECT_TRUE(eventually([&] { return pool.stats().idle == 1; }));
  // The housekeeper closes outside the pool's lock, after idle drops.
  EXPECT_TRUE(eventually([&] { return pool.stats().closed == 3; }));
  EXPECT_EQ(t.closed.load(), 3);
  std::this_thread::sleep_for(200ms);  // another idle_timeout: min_idle stays
  EXPECT_EQ(pool.stats().idle, 1u);
  EXPECT_EQ(t.closed.load(), 3);
}

TEST(ConnectionPool, ConnectionsAreRetiredAfterMaxLifetime) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.max_lifetime = 150ms;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  int first_id;
  {
    auto lease = pool.acquire();
    first_id = lease.as<FakeConnection>().id();
  }
  EXPECT_TRUE(eventually([&] { return pool.stats().closed >= 1 && pool.stats().idle == 1; }));
  auto lease = pool.acquire();
  EXPECT_NE(lease.as<FakeConnection>().id(), first_id);
  EXPECT_GE(t.opened.load(), 2);
}

TEST(ConnectionPool, ValidatesOnlyAfterIdlenessAndReplacesDeadConnections) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.validation_threshold = 500ms;
  o.keepalive_interval = 0ms;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  for (int i = 0; i < 100; ++i) pool.acquire();  // back to back: no ping
  EXPECT_EQ(t.pings.load(), 0);
  std::this_thread::sleep_for(600ms);
  int first_id;
  {
    auto lease = pool.acquire();
    first_id = lease.as<FakeConnection>().id();
  }
  EXPECT_EQ(t.pings.load(), 1);

  std::this_thread::sleep_for(600ms);
  t.pings_to_fail = 1;          // the server dropped it meanwhile
  auto lease = pool.acquire();  // the dead one is closed, a new one opened
  EXPECT_EQ(t.pings_to_fail.load(), 0);
  EXPECT_EQ(t.closed.load(), 1);
  EXPECT_EQ(t.opened.load(), 2);
  EXPECT_NE(lease.as<FakeConnection>().id(), first_id);
}

TEST(ConnectionPool, KeepalivePingsIdleConnections) {
  Tally t;
  ConnectionPoolOptions o;
  o.max_size = 2;
  o.keepalive_interval = 50ms;
  ConnectionPool pool(slow_factory(t, 1ms), o);
  EXPECT_TRUE(eventually([&] { return t.pings.load() >= 4; }));
}

TEST(ConnectionPool, ALeaseHeldTooLongIsReportedWithWhereItWasTaken) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto previous = auditpipe::diagnostics();
  auditpipe::set_diagnostics_logger(std::make_shared<spdlog::logger>("leak-test", ring));
  {
    Tally t;
    ConnectionPoolOptions o;
    o.name = "leaky";
    o.max_size = 1;
    o.leak_detection_threshold = 50ms;
    ConnectionPool pool(slow_factory(t, 1ms), o);
    auto lease = pool.acquire();
    EXPECT_TRUE(eventually([&] { return pool.stats().leaks_reported == 1; }));
  }
  auditpipe::set_diagnostics_logger(previous);
  bool found = false;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("pool 'leaky'") != std::string::npos &&
        line.find("connection_pool_test.cpp") != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << "no leak report naming the pool and the place of the lease";
}

TEST(ConnectionPool, ConnectErrorsReachTheWaitingBorrower) {
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.connection_timeout = 300ms;
  ConnectionPool pool(
      []() -> std::unique_ptr<auditpipe::PooledConnection> {
        throw auditpipe::error("Access denied for user 'app'");
      },
      o);
  // The opener has tried (and failed) before the borrower's wait ends.
  ASSERT_TRUE(eventually([&] { return pool.stats().connect_failures >= 1; }));
  try {
    pool.acquire();
    FAIL() << "expected an error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("Access denied"), std::string::npos) << e.what();
  }
  EXPECT_GE(pool.stats().connect_failures, 1u);
  // Opening the first connection up front: the factory's error, at once.
  try {
    ConnectionPool eager(
        []() -> std::unique_ptr<auditpipe::PooledConnection> {
          throw auditpipe::error("Access denied for user 'app'");
        },
        o, true);
    FAIL() << "expected the factory's error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("Access denied"), std::string::npos) << e.what();
  }
}

// A server reached whose table the sink cannot write: the borrower waiting
// gets the factory's message when that connect fails, not a timeout with
// the outage's stale reason 30 s later (a writer's health reason said
// "Lost connection" for all that time).
TEST(ConnectionPool, AnUnusableServerEndsTheWaitAtOnce) {
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.connection_timeout = 60s;
  std::atomic<bool> go{false};
  ConnectionPool pool(
      [&go]() -> std::unique_ptr<auditpipe::PooledConnection> {
        while (!go.load()) std::this_thread::sleep_for(1ms);
        throw auditpipe::unusable_server("table audit_log does not exist (server db2:3306)");
      },
      o);
  std::thread release([&] {
    ASSERT_TRUE(eventually([&] { return pool.stats().waiting == 1; }));
    go = true;
  });
  try {
    pool.acquire();
    ADD_FAILURE() << "expected the factory's error";
  } catch (const auditpipe::unusable_server& e) {
    EXPECT_NE(std::string(e.what()).find("(server db2:3306)"), std::string::npos) << e.what();
  } catch (const auditpipe::error& e) {
    ADD_FAILURE() << "waited until: " << e.what();
  }
  release.join();
  EXPECT_EQ(pool.stats().timeouts, 0u);
}

TEST(ConnectionPool, RejectsAnUnboundedWait) {
  Tally t;
  ConnectionPoolOptions o;
  o.connection_timeout = 0ms;
  EXPECT_THROW(ConnectionPool(slow_factory(t, 1ms), o), auditpipe::error);
}

}  // namespace

// A pool whose threads cannot all be started (a limit on memory or threads)
// throws auditpipe::error saying so, having stopped the ones it started and
// closed its first connection. Before, the unwinding destroyed a joinable
// thread: std::terminate.
TEST(ConnectionPool, AThreadThatCannotBeStartedIsAnErrorNotAnAbort) {
  if (!testing_support::multithreaded_fork_testable)
    GTEST_SKIP() << "the sanitizers reserve more address space than any limit leaves";
  EXPECT_EQ(testing_support::start_under_address_limits([]() -> std::function<bool()> {
              static Tally t;
              ConnectionPoolOptions o;
              o.max_size = 4;
              o.opener_threads = 4;
              auto pool = std::make_shared<ConnectionPool>(slow_factory(t, 1ms), o, true);
              return [pool] {
                { auto lease = pool->acquire(); }  // throws if it cannot lend one
                return true;
              };
            }),
            0);
}
