// Reliability of the pipeline alone, against a test sink: spilling when the
// pool is full and replaying exactly once, spilling at close and replaying
// at the next start, the durable pool's recovery, dead letters, health.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "captured_warnings.h"
#include "collecting_sink.h"
#include "eventually.h"
#include "exactly_once.h"
#include "null_row.h"
#include "temp_dir.h"
#include "wait_slack.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::Options;
using auditpipe::Overflow;
using auditpipe::Status;
using testing_support::AuditRow;
using testing_support::CollectingSink;
using testing_support::eventually;
using testing_support::expect_exactly_once;
using testing_support::TempDir;

Status log_one(auditpipe::Logger<AuditRow>& logger, std::int64_t id) {
  auto r = logger.acquire();
  if (!r) return r.status();
  r->message_id = id;
  r->payload = "reliable";
  return r.commit();
}

// Logs `n` records to a sink that fails every write, and closes: all of
// them end on disk, in the spill directory of `o`.
void spill_while_the_database_is_down(const Options& o, int n) {
  auto down = std::make_shared<CollectingSink>();
  down->fail_next(1'000'000);
  auditpipe::Logger<AuditRow> logger(down, o);
  for (int i = 0; i < n; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
  const auto report = logger.close(100ms);
  ASSERT_EQ(report.on_disk, static_cast<std::uint64_t>(n));
  EXPECT_EQ(down->keys().size(), 0u);
}

std::size_t files_in(const std::filesystem::path& dir, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      ++n;
  }
  return n;
}

TEST(Reliability, SpillTakesWhatThePoolCannotAndIsReplayedExactlyOnce) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();  // the database is away
  Options o;
  o.capacity = 16;
  o.batch_size = 8;
  o.overflow = Overflow::spill;
  o.spill_path = dir.path() / "spill";
  auditpipe::Logger<AuditRow> logger(sink, o);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(log_one(logger, i), Status::ok) << i;
  auto stats = logger.stats();
  EXPECT_GE(stats.spilled, 1000u - 16u);
  EXPECT_EQ(stats.timed_out + stats.dropped, 0u);
  EXPECT_EQ(stats.health, auditpipe::Health::degraded);  // records wait in the spill directory
  sink->release();                                       // the database is back
  EXPECT_TRUE(eventually([&] {
    const auto s = logger.stats();
    return s.written + s.replayed == 1000 && s.spill_bytes <= 32;
  }));
  const auto report = logger.close();
  expect_exactly_once(sink->keys(), 1000);
  EXPECT_EQ(report.stats.written + report.stats.replayed, 1000u);
  EXPECT_EQ(report.stats.health, auditpipe::Health::ok);
  EXPECT_EQ(files_in(o.spill_path, ".seg"), 0u);
}

TEST(Reliability, AFullSpillDirectoryFallsBackToWaitingAndIsCounted) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();
  Options o;
  o.capacity = 8;
  o.batch_size = 4;
  o.overflow = Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.spill_max_bytes = 4096;  // room for a few records only
  // Longer than the scheduling noise the bound below allows for, so that a
  // wait that ignored its deadline (a second max_wait after the refused
  // append) cannot hide inside that allowance.
  o.max_wait =
      2 * std::chrono::duration_cast<std::chrono::milliseconds>(testing_support::wait_slack()) +
      10ms;
  auditpipe::Logger<AuditRow> logger(sink, o);
  constexpr int offered = 100;
  int ok = 0, timed_out = 0;
  for (int i = 0; i < offered; ++i) {
    const Status s = log_one(logger, i);
    ok += s == Status::ok;
    timed_out += s == Status::timed_out;
  }
  const auto stats = logger.stats();
  EXPECT_EQ(ok + timed_out, offered);
  EXPECT_GT(stats.spill_refused, 0u);
  EXPECT_EQ(stats.timed_out, static_cast<std::uint64_t>(timed_out));
  // The refused append and the wait for a slot together: max_wait.
  EXPECT_LE(stats.producer_wait_ns.max,
            static_cast<std::uint64_t>(
                std::chrono::nanoseconds(o.max_wait + testing_support::wait_slack()).count()));
  EXPECT_EQ(static_cast<std::uint64_t>(ok), stats.committed);
  sink->release();
  const auto report = logger.close();
  // Each accepted record written from its slot, or spilled (those replayed
  // since are among the spilled: `written` does not count them).
  EXPECT_EQ(report.stats.written + report.stats.spilled, static_cast<std::uint64_t>(ok));
}

TEST(Reliability, CloseSpillsWhatItCouldNotWriteAndTheNextStartReplaysIt) {
  TempDir dir;
  Options o;
  o.capacity = 256;
  o.batch_size = 50;
  o.spill_path = dir.path() / "spill";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  {
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    const auto report = logger.close(100ms);
    EXPECT_EQ(report.spilled, 100u);
    EXPECT_EQ(report.unwritten, 0u);
    EXPECT_FALSE(report.drained);
    EXPECT_EQ(down->keys().size(), 0u);
  }
  auto up = std::make_shared<CollectingSink>();
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    EXPECT_TRUE(eventually([&] { return logger.stats().replayed == 100; }));
    logger.close();
  }
  expect_exactly_once(up->keys(), 100);
}

// Logs n records for a database described as `database` that stores none,
// and closes: they stay in o's spill directory or durable pool.
void keep_records_for(const std::string& database, const Options& o, int n) {
  auto down = std::make_shared<CollectingSink>();
  down->describe_as(database);
  down->fail_next(1'000'000);
  auditpipe::Logger<AuditRow> logger(down, o);
  for (int i = 0; i < n; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
  EXPECT_FALSE(logger.close(100ms).drained);
}

// Opens a logger of `database` on o's files, lets it write the n records
// they keep (each once), and returns what was warned of meanwhile.
std::string write_kept_records_to(const std::string& database, const Options& o, int n) {
  testing_support::CapturedWarnings warnings;
  auto up = std::make_shared<CollectingSink>();
  up->describe_as(database);
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    EXPECT_TRUE(eventually([&] { return up->keys().size() >= static_cast<std::size_t>(n); }));
    logger.close();
  }
  expect_exactly_once(up->keys(), n);
  return warnings.text();
}

Options keeping_options(const TempDir& dir, bool spill) {
  Options o;
  o.capacity = 256;
  o.batch_size = 50;
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  (spill ? o.spill_path : o.durable_path) = dir.path() / (spill ? "spill" : "pool");
  return o;
}

// Records kept for one database, opened by a logger of another (a copied
// configuration): written there, as a failover to another host must be,
// but warned of, naming both. Before, nothing was said.
TEST(Reliability, RecordsKeptForAnotherDatabaseAreWarnedOfWhenAnotherWritesThem) {
  TempDir dir;
  const Options o = keeping_options(dir, true);
  keep_records_for("mariadb://audit:***@first/db?pool_size=2&host=x", o, 100);
  {
    // The same database with other options, its password moved to a file
    // (no mask in what the sink describes), its scheme's other name:
    // nothing to say.
    testing_support::CapturedWarnings warnings;
    keep_records_for("mysql://audit@first/db?host=x&password_file=/p&pool_size=4", o, 0);
    EXPECT_EQ(warnings.text().find("kept for"), std::string::npos) << warnings.text();
  }
  // Another server named by an option.
  std::string said = write_kept_records_to("mysql://audit@first/db?host=y", o, 100);
  EXPECT_NE(said.find("spill directory " + o.spill_path.string() +
                      " holds 100 records kept for mysql://audit@first/db?host=x; they are "
                      "written to mysql://audit@first/db?host=y now"),
            std::string::npos)
      << said;
  keep_records_for("test://first", o, 100);
  said = write_kept_records_to("test://second", o, 100);
  EXPECT_NE(said.find("spill directory " + o.spill_path.string() +
                      " holds 100 records kept for test://first; they are written to "
                      "test://second now"),
            std::string::npos)
      << said;
}

// A mark that cannot be written (here its temporary's name is taken by a
// directory; a full disk does the same) is warned of: without it a later
// start could not warn. Before, nothing was said.
TEST(Reliability, ADestinationThatCannotBeRecordedIsWarnedOf) {
  TempDir dir;
  const Options o = keeping_options(dir, false);
  std::filesystem::create_directories(o.durable_path.string() + ".destination.new/x");
  testing_support::CapturedWarnings warnings;
  keep_records_for("test://first", o, 1);
  EXPECT_NE(warnings.text().find("cannot record in " + o.durable_path.string() +
                                 ".destination which database durable pool " +
                                 o.durable_path.string() + " keeps records for"),
            std::string::npos)
      << warnings.text();
}

// The same for a durable pool's records.
TEST(Reliability, PoolRecordsKeptForAnotherDatabaseAreWarnedOfWhenAnotherWritesThem) {
  TempDir dir;
  const Options o = keeping_options(dir, false);
  keep_records_for("test://first", o, 10);
  const std::string said = write_kept_records_to("test://second", o, 10);
  EXPECT_NE(said.find("durable pool " + o.durable_path.string() +
                      " holds 10 records kept for test://first; they are written to "
                      "test://second now"),
            std::string::npos)
      << said;
}

// Records spilled during an outage and records close() spilled at its
// deadline are both on disk when it returns: the report says how many,
// exactly, and flush() never claims success while any wait there.
TEST(Reliability, CloseReportsEveryRecordStillOnDisk) {
  TempDir dir;
  Options o;
  o.capacity = 64;
  o.batch_size = 16;
  o.overflow = Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  std::uint64_t on_disk = 0;
  {
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = 0; i < 500; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    const auto before = logger.stats();
    EXPECT_GT(before.spilled, 0u);
    EXPECT_EQ(before.spill_records, before.spilled);
    EXPECT_FALSE(logger.flush(50ms));
    const auto report = logger.close(100ms);
    EXPECT_FALSE(report.drained);
    EXPECT_EQ(report.unwritten, 0u);
    EXPECT_GT(report.spilled, 0u) << "close() found nothing left in the pool to spill";
    EXPECT_EQ(report.on_disk, 500u);
    EXPECT_EQ(report.stats.spill_records, 500u);
    on_disk = report.on_disk;
  }
  auto up = std::make_shared<CollectingSink>();
  up->hold();  // nothing is stored until the count at start is seen
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    EXPECT_EQ(logger.stats().spill_records, on_disk) << "counted again at start";
    up->release();
    EXPECT_TRUE(logger.flush(10s));
    EXPECT_EQ(logger.stats().spill_records, 0u);
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.on_disk, 0u);
    EXPECT_EQ(report.stats.replayed, on_disk);
  }
  expect_exactly_once(up->keys(), 500);
}

// A writer sleeping in a long retry backoff does not hold close() or
// flush() past their deadlines: both return by then (+100 ms for the
// wake-up and the spill), and what was not written is reported.
TEST(Reliability, CloseAndFlushKeepTheirDeadlinesThroughARetryBackoff) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->fail_next(1'000'000);
  Options o;
  o.capacity = 64;
  o.batch_size = 8;
  o.spill_path = dir.path() / "spill";
  o.retry_backoff_initial = 30s;  // every writer is asleep in its first backoff
  o.retry_backoff_max = 60s;
  auditpipe::Logger<AuditRow> logger(sink, o);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
  ASSERT_TRUE(eventually([&] { return logger.stats().write_failures >= 1; }));
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  EXPECT_FALSE(logger.flush(300ms));
  EXPECT_LE(clock::now() - t0, 300ms + 100ms);
  t0 = clock::now();
  const auto report = logger.close(300ms);
  EXPECT_LE(clock::now() - t0, 300ms + 100ms);
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.spilled + report.unwritten, 40u);
  EXPECT_EQ(report.on_disk, 40u);
}

// A replay that close() stops part-way through a segment: the report
// counts only the records not yet stored, and the next start replays
// exactly those (not the whole segment again).
TEST(Reliability, AReplayStoppedPartWayResumesWhereItStopped) {
  TempDir dir;
  Options o;
  o.capacity = 256;
  o.batch_size = 20;
  o.write_latency_target = 0ms;  // replay batches of exactly 20
  o.spill_path = dir.path() / "spill";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  ASSERT_NO_FATAL_FAILURE(spill_while_the_database_is_down(o, 100));
  auto flaky = std::make_shared<CollectingSink>();
  flaky->fail_after(2);  // two replay batches stored, then the database is gone
  {
    auditpipe::Logger<AuditRow> logger(flaky, o);
    ASSERT_TRUE(eventually([&] { return logger.stats().replayed == 40; }));
    const auto report = logger.close(200ms);
    EXPECT_FALSE(report.drained);
    EXPECT_EQ(report.on_disk, 60u);
  }
  auto up = std::make_shared<CollectingSink>();
  up->hold();
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    EXPECT_EQ(logger.stats().spill_records, 60u);
    up->release();
    EXPECT_TRUE(logger.flush(10s));
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.replayed, 60u) << "the stored 40 were replayed again";
  }
  auto keys = flaky->keys();
  const auto rest = up->keys();
  keys.insert(keys.end(), rest.begin(), rest.end());
  expect_exactly_once(keys, 100);
  EXPECT_EQ(files_in(o.spill_path, ".replayed"), 0u);
}

// The spill directory, or the durable pool's file, removed under a running
// logger (a clean-up job): before, records went on being spilled into the
// removed directory, out of reach of every later start, and nothing was
// said; now health is down saying so, and nothing more is spilled there.
TEST(Reliability, ASpillDirectoryOrPoolFileRemovedUnderTheLoggerIsHealthDown) {
  TempDir dir;
  Options o;
  o.capacity = 16;
  o.batch_size = 8;
  o.overflow = Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.durable_path = dir.path() / "pool.dat";
  o.max_wait = 20ms;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();
  auditpipe::Logger<AuditRow> logger(sink, o);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(log_one(logger, i), Status::ok) << i;
  ASSERT_GE(logger.stats().spilled, 50u);
  std::filesystem::remove_all(o.spill_path);
  std::filesystem::remove(o.durable_path);
  // (Health may be down before, for the held writes: the reason tells.)
  ASSERT_TRUE(eventually([&] {
    const auto s = logger.stats();
    return s.health_reason.find("durable pool's file") != std::string::npos &&
           s.health_reason.find("records it held are lost") != std::string::npos;
  }));
  const auto stats = logger.stats();
  EXPECT_EQ(stats.health, auditpipe::Health::down);
  EXPECT_NE(stats.health_reason.find("spill directory " + o.spill_path.string() + " was removed"),
            std::string::npos)
      << stats.health_reason;
  EXPECT_NE(stats.health_reason.find("durable pool's file " + o.durable_path.string()),
            std::string::npos)
      << stats.health_reason;
  EXPECT_NE(stats.health_reason.find(std::to_string(stats.spilled) + " records it held are lost"),
            std::string::npos)
      << stats.health_reason;
  EXPECT_EQ(stats.unwritten, stats.spilled);  // lost with it: counted
  // Running still: not "closed with N committed records unwritten".
  EXPECT_EQ(stats.health_reason.find("closed with"), std::string::npos) << stats.health_reason;
  for (int i = 100; i < 120; ++i) EXPECT_NE(log_one(logger, i), Status::ok) << i;  // pool full
  EXPECT_EQ(logger.stats().spilled, stats.spilled);
  sink->release();
  // What the pool held is written, and nothing is waited for in the
  // directory (before, flush() and close() waited to their deadlines).
  EXPECT_TRUE(logger.flush(5s));
  const auto report = logger.close();
  EXPECT_EQ(report.on_disk, 0u);
  EXPECT_EQ(report.unwritten, stats.spilled);
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.stats.written + report.unwritten, report.stats.committed);
}

// The same check does not take a relative path, after the program changed
// its working directory (a daemon's chdir("/")), for a removal.
TEST(Reliability, ARelativeSpillOrPoolPathOutlivesAChangeOfWorkingDirectory) {
  TempDir dir;
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  Options o;
  o.overflow = Overflow::spill;
  o.spill_path = "spill";
  o.durable_path = "pool.dat";
  auto sink = std::make_shared<CollectingSink>();
  auditpipe::Logger<AuditRow> logger(sink, o);
  std::filesystem::current_path("/");
  ASSERT_EQ(log_one(logger, 1), Status::ok);
  std::this_thread::sleep_for(1500ms);  // the check runs once a second
  const auto stats = logger.stats();
  EXPECT_EQ(stats.health, auditpipe::Health::ok) << stats.health_reason;
  EXPECT_TRUE(logger.close().drained);
  std::filesystem::current_path(before);
}

TEST(Reliability, ADurablePoolKeepsCommittedRecordsForTheNextStart) {
  TempDir dir;
  Options o;
  o.capacity = 128;
  o.batch_size = 16;
  o.durable_path = dir.path() / "pool.dat";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  std::int64_t source = 0;
  {
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    const auto report = logger.close(50ms);
    EXPECT_EQ(report.unwritten, 50u);  // kept in the file
  }
  auto up = std::make_shared<CollectingSink>();
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    for (int i = 50; i < 60; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.recovered, 50u);
    EXPECT_EQ(report.stats.written, 60u);
  }
  const auto keys = up->keys();
  expect_exactly_once(keys, 60);
  // One thread, one source: the second run continued its seqs.
  std::set<std::int64_t> sources;
  for (const auto& k : keys) sources.insert(k.first);
  EXPECT_EQ(sources.size(), 1u);
  source = *sources.begin();
  EXPECT_NE(source, 0);
}

// Options::source_id_base is how instances rule out colliding keys
// (docs/scale-out.md): a new durable pool file numbers its sources from it.
// An existing file keeps the base it was made with, so that its sources'
// seqs go on, and says so.
TEST(Reliability, ANewDurablePoolTakesTheSourceIdBaseAnExistingOneKeepsItsOwn) {
  TempDir dir;
  Options o;
  o.capacity = 128;
  o.batch_size = 16;
  o.durable_path = dir.path() / "pool.dat";
  constexpr std::int64_t made_with = std::int64_t{42} << 16, asked_later = std::int64_t{43} << 16;
  o.source_id_base = made_with;
  auto first = std::make_shared<CollectingSink>();
  {
    auditpipe::Logger<AuditRow> logger(first, o);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    ASSERT_TRUE(logger.close().drained);
  }
  ASSERT_EQ(first->keys().size(), 3u);
  for (const auto& k : first->keys()) EXPECT_EQ(k.first, made_with);

  o.source_id_base = asked_later;
  auto second = std::make_shared<CollectingSink>();
  testing_support::CapturedWarnings warnings;
  {
    auditpipe::Logger<AuditRow> logger(second, o);
    ASSERT_EQ(log_one(logger, 3), Status::ok);
    ASSERT_TRUE(logger.close().drained);
  }
  ASSERT_EQ(second->keys().size(), 1u);
  EXPECT_EQ(second->keys()[0], std::make_pair(made_with, std::int64_t{3}));
  EXPECT_NE(warnings.text().find("was made with source_id_base " + std::to_string(made_with)),
            std::string::npos)
      << warnings.text();
}

TEST(Reliability, RecoveredRecordsAreWrittenBeforeAnythingNew) {
  TempDir dir;
  Options o;
  // More recovered records than moodycamel's consumer takes from one
  // producer before it turns to the next (256): queued with the rest, they
  // would interleave with the new ones.
  constexpr int recovered_count = 2000, threads = 4, each = 250;
  o.capacity = 4096;
  o.batch_size = 100;
  // One writer: with two, the last recovered batch and the first new one
  // may be stored at once, in either order.
  o.writers = 1;
  o.durable_path = dir.path() / "pool.dat";
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  {
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = 0; i < recovered_count; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);
    EXPECT_EQ(logger.close(50ms).unwritten, static_cast<std::uint64_t>(recovered_count));
  }
  auto up = std::make_shared<CollectingSink>();
  up->hold();  // the writers' first batches wait until new records are queued too
  {
    auditpipe::Logger<AuditRow> logger(up, o);
    std::vector<std::thread> producers;
    for (int t = 0; t < threads; ++t) {
      producers.emplace_back([&logger, t] {
        for (int i = 0; i < each; ++i) {
          ASSERT_EQ(log_one(logger, 100'000 + t * 1000 + i), Status::ok);
        }
      });
    }
    for (auto& p : producers) p.join();
    up->release();
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.recovered, static_cast<std::uint64_t>(recovered_count));
  }
  const auto keys = up->keys();
  constexpr std::size_t total = recovered_count + threads * each;
  ASSERT_EQ(keys.size(), total);
  // The rows stored first are the first run's, all of them: its one
  // thread's seqs 0.. in one source (a second-run thread may continue that
  // source, with higher seqs).
  const std::int64_t first_source = keys.front().first;
  std::size_t out_of_place = 0;
  for (std::size_t i = 0; i < recovered_count; ++i) {
    out_of_place += keys[i].first != first_source || keys[i].second >= recovered_count;
  }
  EXPECT_EQ(out_of_place, 0u) << "new records stored among the recovered ones";
  expect_exactly_once(keys, total);
}

// The records a sink stored, as NullRows compared with what was logged:
// every NULL still NULL, every zero, empty string and value as it was.
void expect_null_rows_intact(const CollectingSink& sink, std::int64_t n) {
  const auto rows = sink.rows();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(n));
  std::set<std::int64_t> seen;
  for (const auto& bytes : rows) {
    testing_support::NullRow back;
    std::memcpy(static_cast<void*>(&back), bytes.data(), sizeof back);
    const testing_support::NullRow logged = testing_support::null_row(back.message_id);
    EXPECT_EQ(testing_support::null_row_difference(reinterpret_cast<const std::byte*>(&logged),
                                                   bytes.data()),
              "")
        << "record " << back.message_id;
    seen.insert(back.message_id);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
}

void log_null_rows(auditpipe::Logger<testing_support::NullRow>& logger, std::int64_t from,
                   std::int64_t to) {
  for (std::int64_t i = from; i < to; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    *r = testing_support::null_row(i);
    ASSERT_EQ(r.commit(), Status::ok);
  }
}

// Small batches and quick retries, for 30 NullRows written through a sink
// that is down and then through one that is up.
Options null_row_options() {
  Options o;
  o.capacity = 64;
  o.batch_size = 16;
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  return o;
}

// Logs 30 NullRows while every write fails, and closes within `grace`.
auditpipe::CloseReport log_null_rows_while_down(const Options& o, std::chrono::milliseconds grace) {
  auto down = std::make_shared<CollectingSink>();
  down->fail_next(1'000'000);
  auditpipe::Logger<testing_support::NullRow> logger(down, o);
  log_null_rows(logger, 0, 30);
  return logger.close(grace);
}

TEST(Reliability, NullsSurviveASpillAndItsReplay) {
  TempDir dir;
  Options o = null_row_options();
  o.spill_path = dir.path() / "spill";
  EXPECT_EQ(log_null_rows_while_down(o, 100ms).spilled, 30u);
  auto up = std::make_shared<CollectingSink>();
  up->keep_bytes();
  {
    auditpipe::Logger<testing_support::NullRow> logger(up, o);
    EXPECT_TRUE(eventually([&] { return logger.stats().replayed == 30; }));
    logger.close();
  }
  expect_null_rows_intact(*up, 30);
}

TEST(Reliability, NullsSurviveTheDurablePoolsRecovery) {
  TempDir dir;
  Options o = null_row_options();
  o.durable_path = dir.path() / "pool.dat";
  EXPECT_EQ(log_null_rows_while_down(o, 50ms).unwritten, 30u);  // kept in the file
  auto up = std::make_shared<CollectingSink>();
  up->keep_bytes();
  {
    auditpipe::Logger<testing_support::NullRow> logger(up, o);
    const auto report = logger.close();
    EXPECT_EQ(report.stats.recovered, 30u);
  }
  expect_null_rows_intact(*up, 30);
}

TEST(Reliability, ANullIsJsonNullInTheDeadLetterFile) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->refuse_if([](const auditpipe::RecordRef&) { return true; });
  Options o;
  o.dead_letter_path = dir.path() / "dead.jsonl";
  {
    auditpipe::Logger<testing_support::NullRow> logger(sink, o);
    auto r = logger.acquire();
    r->message_id = 1;
    r->i32 = 0;
    r->note = "";
    r->detail = "stale";
    r->detail = std::nullopt;
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_EQ(logger.close().stats.dead_lettered, 1u);
  }
  std::ifstream in(o.dead_letter_path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find(R"("i32":0,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("note":"",)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("detail":null})"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("at":null,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("amount":null,)"), std::string::npos) << line;
}

// The text under a NULL is nobody's: the writer neither repairs nor
// counts it, and the sink gets it NULL.
TEST(Reliability, TheTextOfANullIsNeverRepairedOrCounted) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  {
    auditpipe::Logger<testing_support::NullRow> logger(sink);
    auto r = logger.acquire();
    r->message_id = 1;
    r->note = "bad \xFF\xFE";
    r->note = std::nullopt;
    r->detail = "bad \xFF";
    ASSERT_EQ(r.commit(), Status::ok);
    const auto report = logger.close();
    EXPECT_EQ(report.stats.invalid_utf8_fields, 1u);  // detail's, not note's
  }
  ASSERT_EQ(sink->rows().size(), 1u);
  testing_support::NullRow back;
  std::memcpy(static_cast<void*>(&back), sink->rows()[0].data(), sizeof back);
  EXPECT_FALSE(back.note.has_value());
  ASSERT_TRUE(back.detail.has_value());
  EXPECT_EQ(*back.detail, "bad \xEF\xBF\xBD");
}

struct OtherRow {
  std::int64_t id = 0;
};
constexpr auto describe(auditpipe::type_tag<OtherRow>) {
  return auditpipe::table<OtherRow>("other", AUDITPIPE_COLUMN(OtherRow, id));
}

// Options::capacity changed between two runs (a new user raised it after
// an outage): the file follows it, carrying the committed records it holds
// and its sources' seqs, as long as those records fit.
TEST(Reliability, ADurablePoolFollowsACapacityChangeWithTheRecordsItHolds) {
  TempDir dir;
  Options o;
  o.batch_size = 16;
  // Through a symlink, as a deployment may point it: it stays one.
  const auto real = dir.path() / "real.dat";
  o.durable_path = dir.path() / "pool.dat";
  std::filesystem::create_symlink(real, o.durable_path);
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 5ms;
  auto keep = [&](std::size_t capacity, int from, int to) {
    o.capacity = capacity;
    auto down = std::make_shared<CollectingSink>();
    down->fail_next(1'000'000);
    auditpipe::Logger<AuditRow> logger(down, o);
    for (int i = from; i < to; ++i) ASSERT_EQ(log_one(logger, i), Status::ok) << i;
    EXPECT_EQ(logger.close(50ms).unwritten, static_cast<std::uint64_t>(to - from));
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> keys;
  auto write = [&](std::size_t capacity, int from, int to, std::uint64_t recovered) {
    o.capacity = capacity;
    auto up = std::make_shared<CollectingSink>();
    {
      auditpipe::Logger<AuditRow> logger(up, o);
      for (int i = from; i < to; ++i) ASSERT_EQ(log_one(logger, i), Status::ok) << i;
      const auto report = logger.close();
      EXPECT_TRUE(report.drained);
      EXPECT_EQ(report.stats.recovered, recovered) << "capacity " << capacity;
    }
    for (const auto& k : up->keys()) keys.push_back(k);
  };
  keep(128, 0, 50);
  namespace fs = std::filesystem;
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write(512, 50, 60, 50);  // larger, records held
  keep(512, 60, 100);
  write(64, 100, 110, 40);  // smaller, records held that fit
  write(32, 110, 120, 0);   // smaller, drained
  keep(32, 120, 150);
  try {
    o.capacity = 16;
    auditpipe::Logger<AuditRow> logger(std::make_shared<CollectingSink>(), o);
    FAIL() << "30 committed records went into a pool of 16";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 30 committed records"), std::string::npos)
        << e.what();
  }
  write(32, 150, 151, 30);  // the refusal changed nothing
  expect_exactly_once(keys, 151);
  std::set<std::int64_t> sources;
  for (const auto& k : keys) sources.insert(k.first);
  EXPECT_EQ(sources.size(), 1u);  // one thread throughout: its seqs went on
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".resizing"), std::string::npos) << e.path();
  EXPECT_TRUE(fs::is_symlink(o.durable_path));
  EXPECT_EQ(fs::status(real).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(Reliability, ADurablePoolFileIsOnlyOpenedForItsLayoutAndByOneLogger) {
  TempDir dir;
  Options o;
  o.capacity = 64;
  o.batch_size = 8;
  o.durable_path = dir.path() / "pool.dat";
  {
    auditpipe::Logger<AuditRow> first(std::make_shared<CollectingSink>(), o);
    try {
      auditpipe::Logger<AuditRow> second(std::make_shared<CollectingSink>(), o);
      FAIL() << "a second logger opened the same pool file";
    } catch (const auditpipe::error& e) {
      EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
    }
  }
  try {
    auditpipe::Logger<OtherRow> other(std::make_shared<CollectingSink>(), o);
    FAIL() << "a pool file was opened for another record layout";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("different table (name or record layout)"),
              std::string::npos)
        << e.what();
  }
}

// What describe() does once memory has run out: its copy of the URL throws.
class OutOfMemorySink : public CollectingSink {
 public:
  std::string describe() const override {
    if (out_of_memory.load()) {
      ++throws;
      throw std::bad_alloc();
    }
    return CollectingSink::describe();
  }
  std::atomic<bool> out_of_memory{false};
  mutable std::atomic<int> throws{0};
};

// A writer says through the diagnostics logger, with the sink's describe(),
// that a write failed, that a record was refused, and that writes are taken
// again; out of memory, saying it throws std::bad_alloc. The line is lost;
// the writer goes on: every record is written or refused, and close()
// drains. (Before, the exception left the writer's thread and
// std::terminate ended the process: a trial under RLIMIT_AS.)
TEST(Reliability, AWriterThatCannotReportAFailureForWantOfMemoryGoesOnWriting) {
  TempDir dir;
  auto sink = std::make_shared<OutOfMemorySink>();
  sink->describe_as("mysql://app:***@db.example.com:3306/audit?pool_size=4");
  sink->refuse_if([](const auditpipe::RecordRef& r) { return r.seq == 5; });
  sink->fail_next(3);
  sink->out_of_memory = true;
  Options o;
  o.batch_size = 16;
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 2ms;
  o.dead_letter_path = dir.path() / "dead.jsonl";
  auditpipe::Logger<AuditRow> logger(sink, o);
  for (int i = 0; i < 100; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  ASSERT_TRUE(logger.flush(30s));
  sink->out_of_memory = false;
  // (Each failed attempt, the refused record, the write after the failures.)
  EXPECT_GE(sink->throws.load(), 5) << "describe() was not asked: the test proves nothing";
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.written, 99u);
  EXPECT_EQ(report.stats.rejected_by_sink, 1u);
  EXPECT_EQ(report.stats.dead_lettered, 1u);
  EXPECT_EQ(sink->keys().size(), 99u);
}

TEST(Reliability, RefusedRecordsGoToTheDeadLetterFile) {
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->refuse_if([](const auditpipe::RecordRef& r) { return r.seq == 3; });
  Options o;
  o.dead_letter_path = dir.path() / "dead.jsonl";
  // Past 2^53: a JSON number would be read as a neighbour by jq or
  // JavaScript, so these must arrive as strings.
  constexpr std::int64_t source = (std::int64_t{1} << 60) + 1;
  o.source_id_base = source;
  {
    auditpipe::Logger<AuditRow> logger(sink, o);
    for (int i = 0; i < 10; ++i) {
      auto r = logger.acquire();
      r->message_id = i == 3 ? (std::int64_t{1} << 62) + 7 : 100 + i;
      r->sender = "quote \" and \\ and \n newline";
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.rejected_by_sink, 1u);
    EXPECT_EQ(report.stats.dead_lettered, 1u);
  }
  std::ifstream in(o.dead_letter_path);
  std::string line, all;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    all = line;
  }
  EXPECT_EQ(lines, 1);
  EXPECT_NE(all.find("\"seq\":\"3\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"source_id\":\"" + std::to_string(source) + "\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"message_id\":\"" + std::to_string((std::int64_t{1} << 62) + 7) + "\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("test sink: refused record"), std::string::npos) << all;
  EXPECT_NE(all.find(R"("sender":"quote \" and \\ and \n newline")"), std::string::npos) << all;
}

// Runs jq on `file` with `filter` (raw output); what it printed.
std::string jq(const std::filesystem::path& file, const std::string& filter) {
  const std::string command =
      std::string(AUDITPIPE_TEST_JQ) + " -r '" + filter + "' " + file.string() + " 2>&1";
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0) << command << "\n" << out;
  }
  return out;
}

// A real JSON reader gets every 64-bit integer of a dead letter exactly,
// past 2^53 (where jq and JavaScript turn a JSON number into its double
// neighbour: 2^62+1 would read as 4611686018427387904): the key, an int64
// column and a timestamp are strings on every line, small values too;
// narrower integers stay numbers.
TEST(Reliability, DeadLettersReadBackExactlyWithJq) {
  if (!std::filesystem::exists(AUDITPIPE_TEST_JQ)) {
    FAIL() << "jq not found (" << AUDITPIPE_TEST_JQ << "): scripts/deps.sh installs it";
  }
  TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->refuse_if([](const auditpipe::RecordRef&) { return true; });
  Options o;
  o.dead_letter_path = dir.path() / "dead.jsonl";
  constexpr std::int64_t source = (std::int64_t{1} << 62) + 1;
  o.source_id_base = source;
  {
    auditpipe::Logger<AuditRow> logger(sink, o);
    for (std::int64_t id : {(std::int64_t{1} << 62) + 3, std::int64_t{5}}) {
      auto r = logger.acquire();
      r->message_id = id;
      r->at = auditpipe::timestamp{(std::int64_t{1} << 53) + 1};
      r->status = -7;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_EQ(logger.close().stats.dead_lettered, 2u);
  }
  EXPECT_EQ(jq(o.dead_letter_path, R"([.source_id, .seq, .record.message_id, .record.at] | @tsv)"),
            "4611686018427387905\t0\t4611686018427387907\t9007199254740993\n"
            "4611686018427387905\t1\t5\t9007199254740993\n");
  EXPECT_EQ(jq(o.dead_letter_path,
               "[(.source_id, .seq, .record.message_id, .record.at, .record.status) | type] | "
               "join(\",\")"),
            "string,string,string,string,number\nstring,string,string,string,number\n");
  EXPECT_EQ(jq(o.dead_letter_path, ".record.status"), "-7\n-7\n");
}

TEST(Reliability, HealthFollowsTheDatabase) {
  auto sink = std::make_shared<CollectingSink>();
  // Failing until the test has seen `down`, however slowly it polls.
  sink->fail_next(1'000'000);
  Options o;
  o.retry_backoff_initial = 20ms;
  o.retry_backoff_max = 20ms;
  o.flush_interval = 1ms;
  auditpipe::Logger<AuditRow> logger(sink, o);
  EXPECT_EQ(logger.stats().health, auditpipe::Health::ok);
  ASSERT_EQ(log_one(logger, 1), Status::ok);
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }));
  sink->fail_next(0);  // the database is back
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::ok; }));
  EXPECT_EQ(logger.close().stats.written, 1u);
}

// A failure no retry can mend (a missing privilege) is not retried
// quietly: health is down at the first one, with the reason, and the writer
// backs off to its slowest pace; once the configuration is fixed, writing
// resumes by itself and the reason clears.
TEST(Reliability, APermanentFailureSetsHealthDownWithTheReason) {
  auto sink = std::make_shared<CollectingSink>();
  sink->fail_permanently_next(1'000'000);
  Options o;
  o.retry_backoff_initial = 1ms;
  o.retry_backoff_max = 100ms;
  o.flush_interval = 1ms;
  auditpipe::Logger<AuditRow> logger(sink, o);
  ASSERT_EQ(log_one(logger, 1), Status::ok);
  ASSERT_TRUE(eventually([&] { return logger.stats().write_failures >= 1; }));
  const auto down = logger.stats();
  EXPECT_EQ(down.health, auditpipe::Health::down);
  EXPECT_NE(down.health_reason.find("permission denied"), std::string::npos) << down.health_reason;
  // At the slowest pace (50-100 ms apart) from the first failure: 200 ms
  // hold at most 5 attempts; doubling from 1 ms would have made 8 or more.
  std::this_thread::sleep_for(200ms);
  EXPECT_LE(logger.stats().write_failures, 6u);
  sink->fail_next(0);  // the grant is given
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::ok; }));
  EXPECT_TRUE(logger.stats().health_reason.empty());
  EXPECT_EQ(logger.close().stats.written, 1u);
}

// A writer stuck inside a write (a connection pool's lease wait, a server
// that does not answer) counts no failure; health must still say `down` once
// nothing has been stored for health_down_after while records wait.
TEST(Reliability, HealthIsDownWhenNothingIsStoredForTooLong) {
  auto sink = std::make_shared<CollectingSink>();
  Options o;
  o.flush_interval = 1ms;
  o.health_down_after = 200ms;
  auditpipe::Logger<AuditRow> logger(sink, o);
  ASSERT_EQ(log_one(logger, 1), Status::ok);
  ASSERT_TRUE(logger.flush(10s));
  std::this_thread::sleep_for(300ms);
  // Idle is not down: nothing waits.
  EXPECT_EQ(logger.stats().health, auditpipe::Health::ok);
  sink->hold();  // the next write blocks inside the sink
  ASSERT_EQ(log_one(logger, 2), Status::ok);
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }));
  const auto down = logger.stats();
  EXPECT_EQ(down.write_failures, 0u);
  EXPECT_NE(down.health_reason.find("no write stored"), std::string::npos) << down.health_reason;
  sink->release();
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::ok; }));
  EXPECT_EQ(logger.close().stats.written, 2u);
}

// A write hung on a stopped server while records waited in the spill
// directory: health was down with "records wait in the spill directory" as
// its whole reason (a trial). The stall is said beside it.
TEST(Reliability, AStallIsSaidBesideTheSpillDirectorysNote) {
  testing_support::TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  Options o;
  o.flush_interval = 1ms;
  o.health_down_after = 200ms;
  o.capacity = 4;
  o.batch_size = 1;
  o.overflow = Overflow::spill;
  o.spill_path = dir.path() / "spill";
  auditpipe::Logger<AuditRow> logger(sink, o);
  ASSERT_EQ(log_one(logger, 0), Status::ok);
  ASSERT_TRUE(logger.flush(10s));
  sink->hold();
  for (int i = 1; i <= 20; ++i) ASSERT_EQ(log_one(logger, i), Status::ok);  // the rest spill
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }));
  const auto down = logger.stats();
  EXPECT_GT(down.spilled, 0u);
  EXPECT_NE(down.health_reason.find("spill directory"), std::string::npos) << down.health_reason;
  EXPECT_NE(down.health_reason.find("no write stored"), std::string::npos) << down.health_reason;
  sink->release();
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  expect_exactly_once(sink->keys(), 21);
}

TEST(Reliability, SpillNeedsADirectory) {
  Options o;
  o.overflow = Overflow::spill;
  EXPECT_THROW(auditpipe::Logger<AuditRow>(std::make_shared<CollectingSink>(), o),
               auditpipe::error);
}

}  // namespace
