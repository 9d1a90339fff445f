// stall: memory and waiting while the database is stalled.
//
// 10,000,000 records are offered by 4 producers while a session holds
// LOCK TABLES bench_audit WRITE for the first `stall` seconds, then lets
// go. Run once with Overflow::block and once with Overflow::drop. The
// process's resident memory is sampled every 100 ms (it must stay flat:
// the pool is the only memory that grows with load, and it is allocated
// up front), and the longest producer wait is compared with max_wait.
//
//   stall <mysql-url> <results-dir> [records=10000000] [stall_seconds=5]
// Writes <results-dir>/stall_rss.csv (policy,seconds,rss_mb) and
// <results-dir>/stall.csv (one summary line per policy).
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/sink.h>
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
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "mysql_admin.h"

namespace {

using Clock = std::chrono::steady_clock;

double rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stall <mysql-url> <results-dir> [records] [stall_seconds]\n");
    return 2;
  }
  const std::string url = argv[1];
  const auditpipe::Url u = auditpipe::parse_url(url);
  const std::filesystem::path out = argv[2];
  const long long records = argc > 3 ? std::atoll(argv[3]) : 10'000'000;
  const int stall_seconds = argc > 4 ? std::atoi(argv[4]) : 5;
  std::filesystem::create_directories(out);
  auditpipe::diagnostics()->set_level(spdlog::level::err);
  std::ofstream samples(out / "stall_rss.csv");
  samples << "policy,seconds,rss_mb\n";
  std::ofstream summary(out / "stall.csv");
  summary << "policy,records,written,dropped,timed_out,max_wait_ms,longest_wait_ms,rss_min_mb,rss_"
             "max_mb,"
             "rss_spread_pct,seconds\n";

  for (const auto policy : {auditpipe::Overflow::block, auditpipe::Overflow::drop}) {
    MYSQL* admin = bench::connect_admin(u, "stall");
    mysql_query(admin, "DROP TABLE IF EXISTS bench_audit");
    auditpipe::Options o;
    o.capacity = 65536;
    o.batch_size = 1000;
    o.overflow = policy;
    o.max_wait = std::chrono::milliseconds(200);
    auditpipe::Logger<bench::AuditEvent> logger(auditpipe::open(url), o);
    MYSQL* locker = bench::connect_admin(u, "stall");
    mysql_query(locker, "LOCK TABLES bench_audit WRITE");
    const auto t0 = Clock::now();
    std::atomic<bool> done{false};
    std::vector<std::pair<double, double>> rss;
    std::thread sampler([&] {
      while (!done.load()) {
        rss.emplace_back(std::chrono::duration<double>(Clock::now() - t0).count(), rss_mb());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    std::thread unlocker([&] {
      std::this_thread::sleep_for(std::chrono::seconds(stall_seconds));
      mysql_query(locker, "UNLOCK TABLES");
    });
    std::atomic<long long> next{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < 4; ++p) {
      producers.emplace_back([&] {
        for (long long i = next.fetch_add(1); i < records; i = next.fetch_add(1)) {
          auto h = logger.acquire();
          if (!h) continue;
          bench::fill_event(*h, i);
          (void)h.commit();
        }
      });
    }
    for (auto& t : producers) t.join();
    unlocker.join();
    const auto report = logger.close(std::chrono::minutes(10));
    done = true;
    sampler.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    mysql_close(locker);
    mysql_query(admin, "DROP TABLE IF EXISTS bench_audit");
    mysql_close(admin);

    const std::string name(auditpipe::to_string(policy));
    double lo = 1e18, hi = 0;
    for (const auto& [t, mb] : rss) {
      samples << name << ',' << t << ',' << mb << '\n';
      if (t >= 1.0) lo = std::min(lo, mb), hi = std::max(hi, mb);  // after warm-up
    }
    const auto& s = report.stats;
    const double longest_ms = static_cast<double>(s.producer_wait_ns.max) / 1e6;
    std::printf(
        "%-5s records %lld  written %llu  dropped %llu  timed out %llu  longest wait %.2f ms "
        "(max_wait %lld ms)  RSS %.1f-%.1f MB (%.2f%%)  %.1f s\n",
        name.c_str(), records, static_cast<unsigned long long>(s.written),
        static_cast<unsigned long long>(s.dropped), static_cast<unsigned long long>(s.timed_out),
        longest_ms, static_cast<long long>(o.max_wait.count()), lo, hi, (hi - lo) / lo * 100.0,
        seconds);
    summary << name << ',' << records << ',' << s.written << ',' << s.dropped << ',' << s.timed_out
            << ',' << o.max_wait.count() << ',' << longest_ms << ',' << lo << ',' << hi << ','
            << (hi - lo) / lo * 100.0 << ',' << seconds << '\n';
  }
  return 0;
}
