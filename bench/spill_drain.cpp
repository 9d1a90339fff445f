// spill_drain: an outage that fills the spill directory, then the database
// back while producers keep producing at half its rate.
//
// 1. The database's rate R: default options, 4 producers unpaced.
// 2. Overflow::spill; a session holds LOCK TABLES bench_audit WRITE for
//    `outage` seconds while 8 producers log as fast as they can (the pool
//    fills, the rest goes to the spill directory, or waits once it is at
//    its cap).
// 3. The lock is let go; the producers go on at R/2 together until the
//    spill directory holds no record (or 120 s pass).
// Prints the records spilled, the directory's largest size per spilled
// record, how long the spill took to drain and how much was produced
// meanwhile, the longest producer wait, what close() reported, and the
// table's row count against the records committed (exactly once).
//
//   spill_drain <mysql-url> [outage_seconds=10]
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include <mysql.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "mysql_admin.h"

namespace {

using Clock = std::chrono::steady_clock;

long long scalar(MYSQL* m, const char* sql) {
  if (mysql_query(m, sql) != 0) return -1;
  MYSQL_RES* r = mysql_store_result(m);
  MYSQL_ROW row = mysql_fetch_row(r);
  const long long v = row && row[0] ? std::atoll(row[0]) : -1;
  mysql_free_result(r);
  return v;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spill_drain <mysql-url> [outage_seconds=10]\n");
    return 2;
  }
  const std::string url = argv[1];
  const auditpipe::Url u = auditpipe::parse_url(url);
  const int outage = argc > 2 ? std::atoi(argv[2]) : 10;
  auditpipe::diagnostics()->set_level(spdlog::level::err);
  MYSQL* admin = bench::connect_admin(u, "spill_drain");

  // 1. The database's rate.
  double rate = 0;
  {
    mysql_query(admin, "DROP TABLE IF EXISTS bench_audit");
    auditpipe::Logger<bench::AuditEvent> logger(auditpipe::open(url), auditpipe::Options{});
    constexpr long long n = 400'000;
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int p = 0; p < 4; ++p) {
      threads.emplace_back([&, p] {
        for (long long i = p; i < n; i += 4) {
          auto r = logger.acquire();
          if (r) bench::fill_event(*r, i), (void)r.commit();
        }
      });
    }
    for (auto& t : threads) t.join();
    (void)logger.close();
    rate = static_cast<double>(n) / seconds_since(t0);
  }
  std::printf("database stores %.0f rows/s (4 producers, default options)\n", rate);

  // 2. The outage.
  mysql_query(admin, "DROP TABLE IF EXISTS bench_audit");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("auditpipe-spill-drain-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auditpipe::Options o;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir;
  auditpipe::Logger<bench::AuditEvent> logger(auditpipe::open(url), o);
  MYSQL* locker = bench::connect_admin(u, "spill_drain");
  mysql_query(locker, "LOCK TABLES bench_audit WRITE");
  std::atomic<int> phase{0};  // 0 outage (unpaced), 1 back (paced at R/2), 2 stop
  std::atomic<long long> next{0}, during_drain{0};
  constexpr int producers = 8;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&] {
      const auto period = std::chrono::duration<double>(producers / (rate / 2));
      Clock::time_point due{};
      while (phase.load(std::memory_order_relaxed) != 2) {
        if (phase.load(std::memory_order_relaxed) == 1) {
          if (due == Clock::time_point{}) due = Clock::now();
          due += std::chrono::duration_cast<Clock::duration>(period);
          std::this_thread::sleep_until(due);
          during_drain.fetch_add(1, std::memory_order_relaxed);
        }
        const long long i = next.fetch_add(1, std::memory_order_relaxed);
        auto r = logger.acquire();
        if (r) bench::fill_event(*r, i), (void)r.commit();
      }
    });
  }
  const auto t_outage = Clock::now();
  std::uint64_t max_bytes = 0;
  while (seconds_since(t_outage) < outage) {
    max_bytes = std::max(max_bytes, logger.stats().spill_bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto at_end_of_outage = logger.stats();
  max_bytes = std::max(max_bytes, at_end_of_outage.spill_bytes);

  // 3. The database back.
  phase = 1;
  mysql_query(locker, "UNLOCK TABLES");
  const auto t_back = Clock::now();
  double drained_after = -1;
  while (seconds_since(t_back) < 120) {
    const auto s = logger.stats();
    max_bytes = std::max(max_bytes, s.spill_bytes);
    if (s.spill_records == 0 && s.spilled > 0) {
      drained_after = seconds_since(t_back);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const long long produced_while_draining = during_drain.load();
  phase = 2;
  for (auto& t : threads) t.join();
  const auto report = logger.close(std::chrono::seconds(60));
  const auto& s = report.stats;
  const long long rows = scalar(admin, "SELECT COUNT(*) FROM bench_audit");
  const long long distinct =
      scalar(admin, "SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM bench_audit) d");
  mysql_close(locker);
  mysql_query(admin, "DROP TABLE IF EXISTS bench_audit");
  mysql_close(admin);
  std::filesystem::remove_all(dir);

  std::printf(
      "outage %d s: %llu records spilled (%llu refused at the cap), largest directory %.1f MB\n",
      outage, static_cast<unsigned long long>(at_end_of_outage.spilled),
      static_cast<unsigned long long>(at_end_of_outage.spill_refused),
      static_cast<double>(max_bytes) / 1e6);
  std::printf("on disk: %.1f bytes per spilled record (record size %zu)\n",
              static_cast<double>(max_bytes) /
                  static_cast<double>(std::max<std::uint64_t>(1, at_end_of_outage.spill_records)),
              sizeof(bench::AuditEvent));
  if (drained_after >= 0) {
    std::printf(
        "spill drained %.1f s after the database came back, while %lld records were "
        "produced at %.0f rows/s (half its rate)\n",
        drained_after, produced_while_draining, rate / 2);
  } else {
    std::printf("spill NOT drained within 120 s (%llu records still on disk)\n",
                static_cast<unsigned long long>(logger.stats().spill_records));
  }
  std::printf(
      "close: drained %d, on_disk %llu, unwritten %llu; committed %llu, timed out %llu, "
      "longest wait %.1f ms (max_wait %lld ms)\n",
      report.drained ? 1 : 0, static_cast<unsigned long long>(report.on_disk),
      static_cast<unsigned long long>(report.unwritten),
      static_cast<unsigned long long>(s.committed), static_cast<unsigned long long>(s.timed_out),
      static_cast<double>(s.producer_wait_ns.max) / 1e6,
      static_cast<long long>(o.max_wait.count()));
  std::printf("table: %lld rows, %lld distinct keys, %llu committed\n", rows, distinct,
              static_cast<unsigned long long>(s.committed));
  return 0;
}
