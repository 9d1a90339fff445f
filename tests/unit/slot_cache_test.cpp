// The record pool's magazines: slots parked in producer threads' caches
// still count against the pool's capacity, and are taken back from idle,
// exiting and busy threads whenever someone would otherwise wait, drop or
// be reported as unfinished. Run under TSan by the test command.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"
#include "exactly_once.h"
#include "producer/producer_registry.h"
#include "producer/record_pool.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::internal::RecordPool;
using auditpipe::internal::SlotCache;
using auditpipe::internal::SlotHeader;
using testing_support::AuditRow;
using testing_support::CollectingSink;

// Large enough for full magazines (1/64 of the pool, at most 32 slots).
constexpr std::size_t capacity = 4096;

RecordPool make_pool(RecordPool::Barrier barrier = RecordPool::Barrier::automatic) {
  return RecordPool(capacity, sizeof(AuditRow), alignof(AuditRow),
                    auditpipe::descriptor_of<AuditRow>().prototype, nullptr, barrier);
}

void expect_accounted(const RecordPool& pool) {
  const auto c = pool.census();
  EXPECT_EQ(c.in_depot + c.cached + c.in_use, capacity);
}

TEST(SlotCache, AThreadTakesSlotsFromItsMagazineAndTheDepotFillsItAMagazineAtATime) {
  RecordPool pool = make_pool();
  ASSERT_EQ(pool.magazine_size(), SlotCache::max_slots);
  SlotCache cache;
  pool.attach(cache);
  std::vector<SlotHeader*> held;
  for (std::uint32_t i = 0; i < 3 * SlotCache::max_slots; ++i) {
    SlotHeader* s = pool.try_acquire(cache);
    ASSERT_NE(s, nullptr);
    held.push_back(s);
  }
  // One refill per magazine plus the slot handed over with it: the depot
  // counted three handovers of 33, not 96 acquires.
  EXPECT_EQ(pool.acquisitions(), 3u * (SlotCache::max_slots + 1));
  auto c = pool.census();
  EXPECT_EQ(c.in_use, held.size());
  EXPECT_EQ(c.cached, 3u);
  expect_accounted(pool);
  for (SlotHeader* s : held) pool.give_back(cache, s);
  c = pool.census();
  EXPECT_EQ(c.in_use, 0u);
  EXPECT_EQ(c.cached, SlotCache::max_slots) << "a magazine parks at most its size";
  pool.detach(cache);
  EXPECT_EQ(pool.census().in_depot, capacity);
}

// Another thread's magazine is full and that thread sits idle: a blocked
// acquirer must not wait for a writer while those slots exist.
class SlotCacheBarrier : public ::testing::TestWithParam<RecordPool::Barrier> {};

TEST_P(SlotCacheBarrier, ABlockedAcquirerIsServedFromAnIdleThreadsMagazine) {
  RecordPool pool = make_pool(GetParam());
  if (GetParam() == RecordPool::Barrier::fence) {
    EXPECT_TRUE(pool.fences());
  }
  std::latch parked(1), done(1);
  std::thread idle([&] {
    SlotCache cache;
    pool.attach(cache);
    std::vector<SlotHeader*> mine;
    for (std::uint32_t i = 0; i < SlotCache::max_slots; ++i)
      mine.push_back(pool.try_acquire(cache));
    for (SlotHeader* s : mine) pool.give_back(cache, s);
    parked.count_down();
    done.wait();
    pool.detach(cache);
  });
  parked.wait();
  ASSERT_EQ(pool.census().cached, SlotCache::max_slots);
  // Empty the depot without touching the magazine.
  std::vector<SlotHeader*> held;
  const std::size_t in_depot = pool.census().in_depot;
  for (std::size_t i = 0; i < in_depot; ++i) held.push_back(pool.try_acquire());
  ASSERT_EQ(pool.census().in_depot, 0u);
  const std::atomic<bool> cancel{false};
  const auto t0 = std::chrono::steady_clock::now();
  SlotHeader* got = pool.acquire_until(t0 + 30s, cancel);
  ASSERT_NE(got, nullptr) << "timed out with slots parked in an idle thread";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(pool.reclaimed(), SlotCache::max_slots);
  EXPECT_EQ(pool.census().cached, 0u);
  held.push_back(got);
  expect_accounted(pool);
  pool.release(held.data(), held.size());
  done.count_down();
  idle.join();
  EXPECT_EQ(pool.census().in_depot, capacity);
}

// A thread's source goes back to the registry when the thread exits; its
// magazine's slots go back to the depot with it, not at the next reclaim.
TEST(SlotCache, AThreadExitingWithAFullMagazineReturnsItsSlots) {
  RecordPool pool = make_pool();
  auditpipe::internal::RecordQueue queue(capacity);
  auto registry = std::make_shared<auditpipe::internal::ProducerRegistry>(queue, pool, 1 << 16);
  std::atomic<std::size_t> cached_before_exit{0};
  std::thread worker([&] {
    auditpipe::internal::Producer* p = registry->current();
    std::vector<SlotHeader*> mine;
    for (std::uint32_t i = 0; i < SlotCache::max_slots; ++i) {
      mine.push_back(pool.try_acquire(p->cache));
    }
    for (SlotHeader* s : mine) pool.give_back(p->cache, s);
    cached_before_exit = pool.census().cached;
  });
  worker.join();
  EXPECT_EQ(cached_before_exit.load(), SlotCache::max_slots);
  const auto c = pool.census();
  EXPECT_EQ(c.cached, 0u);
  EXPECT_EQ(c.in_depot, capacity);
  EXPECT_EQ(pool.reclaimed(), 0u) << "returned by the exiting thread, not reclaimed";
  registry->shutdown();
}

// 100 threads take every slot they can and keep them. The pool hands out
// exactly its capacity, no slot twice, and at every moment the depot, the
// magazines and the slots in use add up to the capacity.
TEST_P(SlotCacheBarrier, HundredThreadsFillingThePoolGetExactlyItsCapacity) {
  constexpr int threads = 100;
  RecordPool pool = make_pool(GetParam());
  std::vector<std::atomic<int>> owner(capacity);
  for (auto& o : owner) o.store(-1);
  std::atomic<int> double_handouts{0};
  std::atomic<std::size_t> acquired{0};
  std::atomic<bool> counting{true};
  std::atomic<int> census_errors{0};
  std::latch filled(threads), release(1);
  std::thread auditor([&] {
    while (counting.load()) {
      const auto c = pool.census();
      if (c.in_depot + c.cached + c.in_use != capacity) ++census_errors;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      SlotCache cache;
      pool.attach(cache);
      std::vector<SlotHeader*> mine;
      while (SlotHeader* s = pool.try_acquire(cache)) {
        int expected = -1;
        if (!owner[s->index].compare_exchange_strong(expected, t)) ++double_handouts;
        mine.push_back(s);
      }
      acquired += mine.size();
      filled.count_down();
      release.wait();
      for (SlotHeader* s : mine) owner[s->index].store(-1);
      pool.release(mine.data(), mine.size());
      pool.detach(cache);
    });
  }
  filled.wait();
  EXPECT_EQ(acquired.load(), capacity);
  EXPECT_EQ(double_handouts.load(), 0);
  auto c = pool.census();
  EXPECT_EQ(c.in_use, capacity);
  EXPECT_EQ(c.cached, 0u);
  EXPECT_EQ(c.in_depot, 0u);
  EXPECT_EQ(c.magazines, static_cast<std::size_t>(threads));
  release.count_down();
  for (auto& w : workers) w.join();
  counting = false;
  auditor.join();
  EXPECT_EQ(census_errors.load(), 0);
  c = pool.census();
  EXPECT_EQ(c.in_depot, capacity);
  EXPECT_EQ(c.in_use, 0u);
}

// Both ways of ordering owners against reclaimers: the kernel's membarrier
// (where it has one) and the fence used where it has not.
INSTANTIATE_TEST_SUITE_P(Barriers, SlotCacheBarrier,
                         ::testing::Values(RecordPool::Barrier::automatic,
                                           RecordPool::Barrier::fence),
                         [](const auto& barrier) {
                           return barrier.param == RecordPool::Barrier::fence ? "fence"
                                                                              : "membarrier";
                         });

// close() with slots parked in 100 threads that logged and then sat idle:
// it drains without waiting for them, reports nothing held, and a
// producer blocked on a full pool meanwhile gets those slots.
TEST(SlotCache, CloseWithSlotsParkedInHundredIdleThreadsDrainsAtOnce) {
  constexpr int threads = 100, per_thread = 20;
  auto sink = std::make_shared<CollectingSink>();
  auditpipe::Options o;
  o.capacity = 8192;
  o.max_wait = 30s;
  auditpipe::Logger<AuditRow> logger(sink, o);
  std::latch logged(threads), leave(1);
  std::atomic<int> not_ok{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        AuditRow row;
        row.message_id = t * per_thread + i;
        row.payload = "parked";
        auto r = logger.acquire();
        if (!r) {
          ++not_ok;
          continue;
        }
        *r = row;
        if (r.commit() != auditpipe::Status::ok) ++not_ok;
      }
      logged.count_down();
      leave.wait();
    });
  }
  logged.wait();
  ASSERT_TRUE(logger.flush(30s));
  const auto before = logger.stats();
  EXPECT_GT(before.pool_cached, 0u) << "no slot parked: the test would prove nothing";
  EXPECT_EQ(before.pool_in_use, 0u);
  const auto t0 = std::chrono::steady_clock::now();
  const auto report = logger.close(30s);
  // Well under Pipeline::uncommitted_grace's wait for unfinished records.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.uncommitted, 0u);
  EXPECT_EQ(report.stats.pool_in_use, 0u);
  EXPECT_EQ(report.stats.pool_cached, 0u) << "close() takes the parked slots back";
  leave.count_down();
  for (auto& w : workers) w.join();
  EXPECT_EQ(not_ok.load(), 0);
  testing_support::expect_exactly_once(sink->keys(), threads * per_thread);
}

// A full pool whose free slots are all parked in other threads' magazines:
// a producer of a logger with Overflow::drop gets one instead of a drop.
TEST(SlotCache, ParkedSlotsAreNeverReportedAsAFullPool) {
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();
  auditpipe::Options o;
  o.capacity = 4096;
  o.overflow = auditpipe::Overflow::drop;
  auditpipe::Logger<AuditRow> logger(sink, o);
  // 64 threads log once each and stay: every one parks most of a
  // magazine, and the held sink keeps every committed slot in use.
  constexpr int parkers = 64;
  std::latch logged(parkers), leave(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < parkers; ++t) {
    threads.emplace_back([&] {
      auto r = logger.acquire();
      EXPECT_TRUE(r);
      EXPECT_EQ(r.commit(), auditpipe::Status::ok);
      logged.count_down();
      leave.wait();
    });
  }
  logged.wait();
  ASSERT_GT(logger.stats().pool_cached, o.capacity / 4);
  // This thread takes everything that is left, parked slots included.
  std::vector<auditpipe::Logger<AuditRow>::Handle> held;
  while (auto r = logger.acquire()) held.push_back(std::move(r));
  EXPECT_EQ(held.size() + parkers, o.capacity) << "dropped while slots were parked";
  EXPECT_EQ(logger.stats().dropped, 1u);  // the one acquire that found none
  held.clear();
  sink->release();
  leave.count_down();
  for (auto& t : threads) t.join();
  EXPECT_TRUE(logger.close(30s).drained);
}

}  // namespace
