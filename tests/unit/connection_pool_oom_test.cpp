// ConnectionPool out of memory: a connection given back when the idle list
// cannot grow. This binary replaces operator new, so that a test can make
// the allocations of its own thread fail.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "auditpipe/sink/connection_pool.h"
#include "eventually.h"

namespace {

thread_local bool allocations_fail = false;

}  // namespace

// (GCC takes free() in a replaced operator delete for a mismatch: it is
// this binary's own pair, malloc and free.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  if (allocations_fail) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

using auditpipe::ConnectionPool;
using auditpipe::ConnectionPoolOptions;

class CountedConnection : public auditpipe::PooledConnection {
 public:
  explicit CountedConnection(std::atomic<int>& closed) : closed_(closed) {}
  ~CountedConnection() override { ++closed_; }
  bool ping() noexcept override { return true; }

 private:
  std::atomic<int>& closed_;
};

// Leases given back while the idle list cannot grow (it takes a block of
// memory per 64 connections or so): those that find no room are closed, and
// counted so, and the pool goes on lending. Before, give_back() (noexcept)
// let std::bad_alloc out, and std::terminate ended the process.
TEST(ConnectionPoolOutOfMemory, AConnectionGivenBackWithNoRoomForItIsClosedNotAnAbort) {
  std::atomic<int> closed{0};
  ConnectionPoolOptions o;
  o.name = "out of memory";
  o.max_size = 300;
  o.min_idle = 0;
  ConnectionPool pool([&] { return std::make_unique<CountedConnection>(closed); }, o);
  std::vector<ConnectionPool::Lease> leases;
  leases.reserve(200);
  for (int i = 0; i < 200; ++i) leases.push_back(pool.acquire());
  allocations_fail = true;
  leases.clear();  // gives each back: no allocation but the idle list's
  allocations_fail = false;
  const auto s = pool.stats();
  EXPECT_GT(closed.load(), 0) << "the idle list never had to grow: the test proves nothing";
  EXPECT_EQ(s.idle + static_cast<std::size_t>(closed.load()), 200u);
  EXPECT_EQ(s.closed, static_cast<std::uint64_t>(closed.load()));
  ConnectionPool::Lease again = pool.acquire();
  EXPECT_TRUE(static_cast<bool>(again));
}

}  // namespace
