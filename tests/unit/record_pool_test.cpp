#include "producer/record_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/table.h"

namespace {

using auditpipe::internal::RecordPool;
using auditpipe::internal::SlotHeader;
using testing_support::AuditRow;

TEST(RecordPool, ExhaustsAtCapacityAndReusesReleasedSlots) {
  RecordPool pool(8, sizeof(AuditRow), alignof(AuditRow),
                  auditpipe::descriptor_of<AuditRow>().prototype);
  std::vector<SlotHeader*> taken;
  for (int i = 0; i < 8; ++i) {
    SlotHeader* s = pool.try_acquire();
    ASSERT_NE(s, nullptr);
    taken.push_back(s);
  }
  EXPECT_EQ(pool.try_acquire(), nullptr);
  EXPECT_EQ(pool.in_use(), 8u);
  pool.release(&taken[3], 1);
  SlotHeader* again = pool.try_acquire();
  EXPECT_EQ(again, taken[3]);
  pool.release(taken.data(), taken.size());
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(RecordPool, ReleasedSlotsAreResetToThePrototype) {
  RecordPool pool(1, sizeof(AuditRow), alignof(AuditRow),
                  auditpipe::descriptor_of<AuditRow>().prototype);
  SlotHeader* s = pool.try_acquire();
  auto* row = reinterpret_cast<AuditRow*>(pool.record(s));
  row->message_id = 99;
  row->sender = "leftover";
  pool.release(&s, 1);
  s = pool.try_acquire();
  row = reinterpret_cast<AuditRow*>(pool.record(s));
  EXPECT_EQ(row->message_id, 0);
  EXPECT_TRUE(row->sender.empty());
  EXPECT_EQ(pool.slot_of(pool.record(s)), s);
}

TEST(RecordPool, RecordsAreAlignedAndSlotsDoNotShareCacheLines) {
  RecordPool pool(4, sizeof(AuditRow), alignof(AuditRow),
                  auditpipe::descriptor_of<AuditRow>().prototype);
  EXPECT_EQ(pool.slot_stride() % 64, 0u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool.record(pool.slot(i))) % alignof(AuditRow), 0u);
  }
}

TEST(RecordPool, RejectsUnusableSizes) {
  const auto* proto = auditpipe::descriptor_of<AuditRow>().prototype;
  EXPECT_THROW(RecordPool(0, 64, 8, proto), auditpipe::error);
  EXPECT_THROW(RecordPool(4, 64, 3, proto), auditpipe::error);
}

// 16 threads hammer acquire/release; each marks the slot it holds and fails
// if the mark is already there (the slot was handed out twice).
TEST(RecordPool, ConcurrentAcquireReleaseNeverHandsOutASlotTwice) {
  constexpr std::size_t capacity = 64;
  constexpr int threads = 16;
  constexpr int rounds = 20000;
  RecordPool pool(capacity, sizeof(AuditRow), alignof(AuditRow),
                  auditpipe::descriptor_of<AuditRow>().prototype);
  std::vector<std::atomic<int>> owner(capacity);
  for (auto& o : owner) o.store(-1);
  std::atomic<int> double_handouts{0};
  std::atomic<long> acquired{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<SlotHeader*> held;
      for (int r = 0; r < rounds; ++r) {
        if (SlotHeader* s = pool.try_acquire()) {
          int expected = -1;
          if (!owner[s->index].compare_exchange_strong(expected, t)) ++double_handouts;
          held.push_back(s);
          ++acquired;
        }
        if (held.size() >= static_cast<std::size_t>(1 + r % 3)) {
          for (SlotHeader* s : held) owner[s->index].store(-1);
          pool.release(held.data(), held.size());
          held.clear();
        }
      }
      for (SlotHeader* s : held) owner[s->index].store(-1);
      pool.release(held.data(), held.size());
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(double_handouts.load(), 0);
  EXPECT_GT(acquired.load(), rounds);
  EXPECT_EQ(pool.in_use(), 0u);
  // Every slot is back on the free list exactly once.
  std::set<SlotHeader*> distinct;
  for (std::size_t i = 0; i < capacity; ++i) {
    SlotHeader* s = pool.try_acquire();
    ASSERT_NE(s, nullptr);
    distinct.insert(s);
  }
  EXPECT_EQ(distinct.size(), capacity);
  EXPECT_EQ(pool.try_acquire(), nullptr);
}

TEST(RecordPool, BlockedAcquireWakesOnReleaseAndTimesOutOtherwise) {
  RecordPool pool(1, sizeof(AuditRow), alignof(AuditRow),
                  auditpipe::descriptor_of<AuditRow>().prototype);
  std::atomic<bool> cancel{false};
  SlotHeader* only = pool.try_acquire();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pool.acquire_until(t0 + std::chrono::milliseconds(50), cancel), nullptr);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));

  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.release(&only, 1);
  });
  SlotHeader* got =
      pool.acquire_until(std::chrono::steady_clock::now() + std::chrono::seconds(30), cancel);
  releaser.join();
  EXPECT_EQ(got, only);

  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel.store(true);
    pool.wake_waiters();
  });
  EXPECT_EQ(pool.acquire_until(std::chrono::steady_clock::now() + std::chrono::seconds(30), cancel),
            nullptr);
  canceller.join();
}

}  // namespace
