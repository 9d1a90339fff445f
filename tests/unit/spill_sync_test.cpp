// A producer's append never waits behind an fdatasync: with a sync held in
// progress (this binary replaces fdatasync with one that can be made to
// wait), appends that rotate segments, seal() and the getters still
// complete; and every segment sealed meanwhile is synced by the next
// sync_if_due().
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "durable/spill_writer.h"
#include "spill_test_rows.h"
#include "temp_dir.h"

namespace {

std::mutex gate_mutex;
std::condition_variable gate_cv;
bool gate_closed = false;  // fdatasync waits while this is set
int waiting = 0;           // calls waiting at the gate
std::atomic<int> calls{0};

}  // namespace

// Replaces the C library's: the spill writer (linked statically into this
// binary) calls this one.
extern "C" int fdatasync(int fd) {
  calls.fetch_add(1);
  {
    std::unique_lock lock(gate_mutex);
    if (gate_closed) {
      ++waiting;
      gate_cv.notify_all();
      gate_cv.wait(lock, [] { return !gate_closed; });
      --waiting;
    }
  }
  return static_cast<int>(::syscall(SYS_fdatasync, fd));
}

namespace {

using auditpipe::RecordRef;
using auditpipe::internal::SpillWriter;
using spill_test::WideRow;

void set_gate(bool closed) {
  std::lock_guard lock(gate_mutex);
  gate_closed = closed;
  gate_cv.notify_all();
}

TEST(SpillSync, AppendsDoNotWaitForASyncInProgress) {
  testing_support::TempDir dir;
  SpillWriter w(dir.path(), auditpipe::descriptor_of<WideRow>(), 1, 1 << 30, 4096);
  const WideRow row = spill_test::typical_wide_row(1);
  const RecordRef ref{1, 0, reinterpret_cast<const std::byte*>(&row)};
  for (int i = 0; i < 50; ++i) ASSERT_EQ(w.append(std::span(&ref, 1)), SpillWriter::Result::ok);

  set_gate(true);
  std::thread syncer([&] { w.sync_if_due(std::chrono::seconds(0)); });
  {
    std::unique_lock lock(gate_mutex);
    ASSERT_TRUE(gate_cv.wait_for(lock, std::chrono::seconds(10), [] { return waiting > 0; }))
        << "sync_if_due did not reach fdatasync";
  }
  // A sync is in progress. Appends that start new segments (4 KiB each:
  // every ~17 records), a seal and the getters must all complete.
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (int i = 0; i < 500; ++i) {
      if (w.append(std::span(&ref, 1)) != SpillWriter::Result::ok) ADD_FAILURE() << w.last_error();
    }
    w.seal();
    (void)w.sealed_segments();
    (void)w.bytes();
    (void)w.records();
    done.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool finished_during_sync = done.load();
  set_gate(false);
  producer.join();
  syncer.join();
  EXPECT_TRUE(finished_during_sync) << "an append waited for the fdatasync in progress";
  EXPECT_EQ(w.records(), 550u);

  // The segments sealed meanwhile are synced (and closed) by the next call.
  const int before = calls.load();
  w.sync_if_due(std::chrono::hours(1));
  EXPECT_GE(calls.load() - before, 25);
  EXPECT_GE(w.sealed_segments().size(), 25u);
}

}  // namespace
