// The pipeline under saturation, against a test sink whose writes take time
// in proportion to their rows: producers that offer more than the sink
// stores wait their share of the drain, never a whole batch's write, and
// none times out while the sink keeps storing; the batch sizer keeps each
// write near its target; a spill left by an outage drains while producers
// keep producing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"
#include "eventually.h"
#include "exactly_once.h"
#include "temp_dir.h"
#include "wait_slack.h"
#include "writer/batch_sizer.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::Options;
using auditpipe::Status;
using auditpipe::internal::BatchSizer;
using testing_support::AuditRow;
using testing_support::CollectingSink;
using testing_support::eventually;
using testing_support::expect_exactly_once;
using testing_support::TempDir;

// The sink takes 1 ms per record, so the default batch of this pool
// (capacity / 8 = 256 records) takes 256 ms to store: longer than
// max_wait. With whole batches every producer waiting for slots would
// give up together; with batches sized to the latency target (~20 ms here)
// slots come back every few dozen records.
TEST(Saturation, ProducersOfferingMoreThanTheSinkStoresNeverTimeOut) {
  constexpr int producers = 16, per_producer = 250;
  auto sink = std::make_shared<CollectingSink>();
  sink->delay_per_record(1ms);
  Options o;
  o.capacity = 2048;
  // A waiting producer's wait is the time between two stored batches, and
  // the sizer keeps each write near max_wait / 10. What it cannot shorten is
  // a writer kept off both cores: by another test (so this one runs alone,
  // tests/CMakeLists.txt) or by the sanitizers' cost on the 16 producers,
  // for which it gets the wait slack too (218 ms, 250 ms under the
  // sanitizers: still under the 256 ms of a whole default batch).
  o.max_wait =
      200ms + std::chrono::duration_cast<std::chrono::milliseconds>(testing_support::wait_slack());
  o.writers = 2;
  std::atomic<int> not_ok{0};
  {
    auditpipe::Logger<AuditRow> logger(sink, o);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (int i = 0; i < per_producer; ++i) {
          auto r = logger.acquire();
          if (!r) {
            not_ok.fetch_add(1);
            continue;
          }
          r->message_id = p * per_producer + i;
          r->payload = "saturated";
          if (r.commit() != Status::ok) not_ok.fetch_add(1);
        }
      });
    }
    for (auto& t : threads) t.join();
    const auto report = logger.close(60s);
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.timed_out, 0u);
    EXPECT_GT(report.stats.blocked, 0u) << "the producers never had to wait: not saturated";
    // Each wait ended within max_wait (and its deadline's wake-up).
    EXPECT_LE(report.stats.producer_wait_ns.max,
              static_cast<std::uint64_t>(
                  std::chrono::nanoseconds(o.max_wait + testing_support::wait_slack()).count()));
    // No write took the default batch's 256 ms.
    EXPECT_LT(report.stats.batch_size.max, 200u);
  }
  EXPECT_EQ(not_ok.load(), 0);
  expect_exactly_once(sink->keys(), producers * per_producer);
}

// An outage fills the spill directory; once the database is back, the
// producers keep going at half its rate, and the spill drains while they
// do: replay takes turns with the live batches instead of waiting for the
// producers to pause.
TEST(Saturation, ASpillDrainsWhileProducersKeepProducing) {
  constexpr int producers = 8;
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->delay_per_record(50us);  // 20,000 records/s per writer, 40,000 with both
  Options o;
  o.capacity = 8192;
  // Large batches, filled at this rate only at their flush interval: a
  // writer nearly always holds a partial batch, the state in which replay
  // used to wait.
  o.batch_size = 4000;
  o.writers = 2;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir.path() / "spill";
  auditpipe::Logger<AuditRow> logger(sink, o);
  std::atomic<std::int64_t> next_id{0};
  std::atomic<int> not_ok{0};
  auto log_one = [&] {
    auto r = logger.acquire();
    if (!r) {
      not_ok.fetch_add(1);
      return;
    }
    r->message_id = next_id.fetch_add(1);
    r->payload = "spilled under load";
    if (r.commit() != Status::ok) not_ok.fetch_add(1);
  };

  sink->hold();  // the outage: writes hang
  {
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&] {
        for (int i = 0; i < 4000; ++i) log_one();
      });
    }
    for (auto& t : threads) t.join();
  }
  ASSERT_GT(logger.stats().spilled, 10'000u) << "the outage did not spill";
  sink->release();

  // Half the database's rate: 20,000 records/s from all producers.
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&] {
      const auto period = std::chrono::microseconds(1'000'000 * producers / 20'000);
      auto next = std::chrono::steady_clock::now();
      while (!stop.load()) {
        next += period;
        std::this_thread::sleep_until(next);
        log_one();
      }
    });
  }
  const bool drained_under_load = eventually(
      [&] {
        const auto s = logger.stats();
        return s.spill_bytes <= 32 && s.replayed == s.spilled;
      },
      60s);
  const std::int64_t produced_meanwhile = next_id.load() - producers * 4000;
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(drained_under_load);
  EXPECT_GT(produced_meanwhile, 0);
  const auto report = logger.close(60s);
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(not_ok.load(), 0);
  expect_exactly_once(sink->keys(), static_cast<std::size_t>(next_id.load()));
}

// Writes that take 10 us per record plus 1 ms per statement, target 20 ms:
// the limit settles where a write takes 14..20 ms, whatever it started at.
TEST(Saturation, TheBatchSizerSettlesAtTheLatencyTarget) {
  auto latency = [](std::size_t n) { return std::chrono::microseconds(1000 + 10 * n); };
  BatchSizer sizer(5000, 20ms);
  EXPECT_EQ(sizer.limit(), 312u) << "starts at a sixteenth of the largest batch";
  for (int i = 0; i < 20; ++i) sizer.stored(sizer.limit(), latency(sizer.limit()));
  EXPECT_GE(latency(sizer.limit()), 14ms);
  EXPECT_LE(latency(sizer.limit()), 20ms);
  // The database slows down tenfold: within three writes the limit fits
  // the target again (each shrinks in proportion, and a statement's fixed
  // cost does not shrink with it).
  for (int i = 0; i < 3; ++i) sizer.stored(sizer.limit(), 10 * latency(sizer.limit()));
  EXPECT_LE(10 * latency(sizer.limit()), 20ms);
  // Partial batches say nothing about larger ones.
  const std::size_t before = sizer.limit();
  sizer.stored(before / 4, latency(before / 4));
  EXPECT_EQ(sizer.limit(), before);
  // Fast again: it grows back, at most twofold a write, to the largest.
  std::size_t last = sizer.limit();
  for (int i = 0; i < 30; ++i) {
    sizer.stored(sizer.limit(), std::chrono::microseconds(100));
    EXPECT_LE(sizer.limit(), 2 * last);
    last = sizer.limit();
  }
  EXPECT_EQ(sizer.limit(), 5000u);
}

// A distant server: each statement costs 15 ms whatever its size, more
// than the 10 ms target. Smaller batches would not shorten a write, only
// cost throughput, so the sizer leaves every batch at the largest instead
// of collapsing to 1%.
TEST(Saturation, AFixedCostAboveTheTargetDoesNotShrinkBatches) {
  auto latency = [](std::size_t n) { return std::chrono::microseconds(15'000 + n); };
  BatchSizer sizer(5000, 10ms);
  for (int i = 0; i < 20; ++i) sizer.stored(sizer.limit(), latency(sizer.limit()));
  EXPECT_EQ(sizer.limit(), 5000u);
}

TEST(Saturation, AZeroTargetKeepsEveryBatchAtTheLargestSize) {
  BatchSizer sizer(5000, 0ms);
  EXPECT_EQ(sizer.limit(), 5000u);
  sizer.stored(5000, 10s);
  EXPECT_EQ(sizer.limit(), 5000u);
}

}  // namespace
