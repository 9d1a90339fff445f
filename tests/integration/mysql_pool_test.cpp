// ConnectionPool with real connections to the throwaway MariaDB server:
// bounded waits, slow connects in parallel, idle eviction and lifetime seen
// from the server's side, and a connection killed by the server replaced.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "auditpipe/sink/connection_pool.h"
#include "auditpipe/status.h"
#include "eventually.h"
#include "mysql_probe.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::ConnectionPool;
using auditpipe::ConnectionPoolOptions;
using testing_support::MysqlProbe;
using testing_support::RealConnection;
using Clock = std::chrono::steady_clock;
using testing_support::eventually;

struct Counter {
  std::atomic<int> connecting{0};
  std::atomic<int> most{0};
};

ConnectionPool::Factory real_factory(Counter& c, std::chrono::milliseconds delay = 0ms) {
  const std::string url = testing_support::mysql_test_url();
  return [&c, delay, url] {
    const int now = ++c.connecting;
    int seen = c.most.load();
    while (now > seen && !c.most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(delay);  // a slow network or server
    auto conn = std::make_unique<RealConnection>(url);
    --c.connecting;
    return conn;
  };
}

// How many of these server-side connections are still open. By id, so
// connections of other tests (or ones the server is still tearing down)
// do not count.
long long still_open(MysqlProbe& probe, const std::vector<unsigned long>& ids) {
  std::string list;
  for (unsigned long id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  return probe.scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN (" + list +
                      ")");
}

TEST(MysqlPool, MaxWaitIsHonouredUnderExhaustion) {
  Counter c;
  ConnectionPoolOptions o;
  o.max_size = 2;
  o.connection_timeout = 200ms;
  ConnectionPool pool(real_factory(c), o);
  // Both open first (min_idle = max_size), so only the third lease waits.
  ASSERT_TRUE(eventually([&] { return pool.stats().idle == 2; }));
  auto a = pool.acquire();
  auto b = pool.acquire();
  const auto t0 = Clock::now();
  EXPECT_THROW(pool.acquire(), auditpipe::error);
  const auto waited = Clock::now() - t0;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
}

TEST(MysqlPool, SixtyFourBorrowersWithSlowConnectsOpenInParallel) {
  Counter c;
  ConnectionPoolOptions o;
  o.max_size = 8;
  o.min_idle = 0;
  ConnectionPool pool(real_factory(c, 150ms), o);
  std::atomic<int> served{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&] {
      auto lease = pool.acquire();
      EXPECT_TRUE(lease->ping());
      ++served;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(served.load(), 64);
  EXPECT_GE(c.most.load(), 2);
  EXPECT_LE(pool.stats().created, 8u);
}

TEST(MysqlPool, IdleConnectionsAboveMinIdleAreClosedOnTheServerToo) {
  MysqlProbe probe;
  Counter c;
  ConnectionPoolOptions o;
  o.max_size = 4;
  o.min_idle = 1;
  o.idle_timeout = 200ms;
  ConnectionPool pool(real_factory(c), o);
  std::vector<unsigned long> ids;
  {
    std::vector<ConnectionPool::Lease> leases;
    for (int i = 0; i < 4; ++i) {
      leases.push_back(pool.acquire());
      ids.push_back(leases.back().as<RealConnection>().id());
    }
    EXPECT_EQ(still_open(probe, ids), 4);
  }
  EXPECT_TRUE(eventually([&] { return still_open(probe, ids) == 1; }));
  EXPECT_EQ(pool.stats().idle, 1u);
}

TEST(MysqlPool, ConnectionsAreReplacedAfterMaxLifetime) {
  Counter c;
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.max_lifetime = 300ms;
  ConnectionPool pool(real_factory(c), o);
  unsigned long first = 0;
  {
    auto lease = pool.acquire();
    first = lease.as<RealConnection>().id();
  }
  EXPECT_TRUE(eventually([&] { return pool.stats().closed >= 1 && pool.stats().idle == 1; }));
  auto lease = pool.acquire();
  EXPECT_NE(lease.as<RealConnection>().id(), first);
}

TEST(MysqlPool, AConnectionKilledByTheServerIsReplacedOnLease) {
  Counter c;
  ConnectionPoolOptions o;
  o.max_size = 1;
  o.validation_threshold = 100ms;
  ConnectionPool pool(real_factory(c), o);
  unsigned long first = 0;
  {
    auto lease = pool.acquire();
    first = lease.as<RealConnection>().id();
  }
  MysqlProbe probe;
  probe.exec("KILL CONNECTION " + std::to_string(first));
  std::this_thread::sleep_for(150ms);  // idle past the validation threshold
  auto lease = pool.acquire();
  EXPECT_NE(lease.as<RealConnection>().id(), first);
  EXPECT_TRUE(lease->ping());
  EXPECT_GE(pool.stats().closed, 1u);
}

}  // namespace
