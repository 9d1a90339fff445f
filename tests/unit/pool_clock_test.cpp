// The durable pool's saved TSC calibration: records a killed run left in
// the file with fast_now() readings get the time they were taken, read with
// the current clock in the same boot and with the saved one after a reboot
// (simulated by changing the boot the file names).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"
#include "durable/pool_file.h"
#include "temp_dir.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::timestamp;
using auditpipe::internal::PoolFile;
using testing_support::AuditRow;
using testing_support::CollectingSink;
using testing_support::TempDir;

constexpr std::int64_t one_hour_us = 3'600'000'000;
constexpr std::int64_t slack_us = 2'000'000;
constexpr int records = 20;
constexpr std::size_t batch = 4;

auditpipe::Options durable_options(const TempDir& dir) {
  auditpipe::Options o;
  o.capacity = 64;
  o.batch_size = batch;
  o.writers = 1;
  o.durable_path = dir.path() / "pool.dat";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  return o;
}

// A run whose database is down: the writer keeps retrying its first batch,
// the rest stay in the file with their readings unconverted.
struct FirstRun {
  std::int64_t before = 0, after = 0;
};
FirstRun run_with_database_down(const auditpipe::Options& o) {
  FirstRun run;
  auto down = std::make_shared<CollectingSink>();
  down->fail_next(1'000'000);
  auditpipe::Logger<AuditRow> logger(down, o);
  run.before = timestamp::now().micros;
  for (int i = 0; i < records; ++i) {
    auto r = logger.acquire();
    EXPECT_TRUE(r);
    r->at = timestamp::fast_now();
    r->message_id = i;
    EXPECT_EQ(r.commit(), auditpipe::Status::ok);
  }
  run.after = timestamp::now().micros;
  EXPECT_EQ(logger.close(50ms).unwritten, static_cast<std::uint64_t>(records));
  return run;
}

// Changes the calibration kept in the pool file, as a reboot would see it.
void edit_saved_clock(const std::filesystem::path& path,
                      const std::function<void(PoolFile::PersistedClock&)>& edit) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  PoolFile::PersistedClock clock{};
  ASSERT_EQ(::pread(fd, &clock, sizeof clock, PoolFile::clock_offset),
            static_cast<ssize_t>(sizeof clock));
  ASSERT_TRUE(clock.whole.load() == 1 || clock.whole.load() == 2) << "no clock was saved";
  edit(clock);
  ASSERT_EQ(::pwrite(fd, &clock, sizeof clock, PoolFile::clock_offset),
            static_cast<ssize_t>(sizeof clock));
  ::close(fd);
}

// The second run: message_id -> `at` of every recovered record.
std::map<std::int64_t, std::int64_t> recover(const auditpipe::Options& o) {
  auto up = std::make_shared<CollectingSink>();
  up->keep_bytes();
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    EXPECT_TRUE(logger.close().drained);
  }
  std::map<std::int64_t, std::int64_t> at;
  for (const auto& bytes : up->rows()) {
    AuditRow row;
    std::memcpy(static_cast<void*>(&row), bytes.data(), sizeof row);
    EXPECT_FALSE(row.at.pending()) << "a cycle count reached the sink";
    at[row.message_id] = row.at.micros;
  }
  EXPECT_EQ(at.size(), static_cast<std::size_t>(records));
  return at;
}

class PoolClock : public testing::Test {
 protected:
  void SetUp() override {
    if (!timestamp::fast_now_reads_tsc()) GTEST_SKIP() << "no invariant TSC: fast_now() is now()";
  }
};

TEST_F(PoolClock, AfterARebootRecoveredReadingsUseTheSavedCalibration) {
  TempDir dir;
  const auto o = durable_options(dir);
  const FirstRun run = run_with_database_down(o);
  // Another boot, and a saved anchor an hour later than the truth: the
  // recovered times must move by that hour, proving the saved clock read them.
  edit_saved_clock(o.durable_path, [](PoolFile::PersistedClock& c) {
    auto& copy = c.copies[c.whole.load() - 1];
    std::memset(copy.boot_id, 0, sizeof copy.boot_id);
    std::strcpy(copy.boot_id, "00000000-0000-0000-0000-another-boot");
    copy.anchor_micros += one_hour_us;
  });
  for (const auto& [id, at] : recover(o)) {
    // The first batch was converted by the writer before the file was left.
    if (id < static_cast<std::int64_t>(batch)) continue;
    EXPECT_GE(at, run.before + one_hour_us - slack_us) << "record " << id;
    EXPECT_LE(at, run.after + one_hour_us + slack_us) << "record " << id;
  }
}

TEST_F(PoolClock, InTheSameBootRecoveredReadingsUseTheCurrentClock) {
  TempDir dir;
  const auto o = durable_options(dir);
  const FirstRun run = run_with_database_down(o);
  edit_saved_clock(o.durable_path, [](PoolFile::PersistedClock& c) {
    c.copies[c.whole.load() - 1].anchor_micros += one_hour_us;
  });
  for (const auto& [id, at] : recover(o)) {
    EXPECT_GE(at, run.before - slack_us) << "record " << id;
    EXPECT_LE(at, run.after + slack_us) << "record " << id;
  }
}

TEST_F(PoolClock, WithoutASavedCalibrationUnreadableReadingsGetTheRecoveryTime) {
  TempDir dir;
  const auto o = durable_options(dir);
  const FirstRun run = run_with_database_down(o);
  edit_saved_clock(o.durable_path, [](PoolFile::PersistedClock& c) { c.whole.store(0); });
  std::this_thread::sleep_for(10ms);
  const std::int64_t recovery = timestamp::now().micros;
  for (const auto& [id, at] : recover(o)) {
    if (id < static_cast<std::int64_t>(batch)) {
      EXPECT_LE(at, run.after + slack_us) << "record " << id;
      continue;
    }
    EXPECT_GE(at, recovery) << "record " << id;
    EXPECT_LE(at, timestamp::now().micros) << "record " << id;
  }
}

}  // namespace
