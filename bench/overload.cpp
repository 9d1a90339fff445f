// overload: 100 producers offering three times what the database stores.
//
// First the database's own rate R is measured (every producer unpaced, a
// short run). Then each configuration runs `records` records offered by 100
// producers, each paced at 3R/100 per second (a producer that fell behind
// its schedule does not sleep until it has caught up, so the pool stays
// full), `runs` times, the configurations alternating so a drifting server
// favours neither:
//   fixed     every batch batch_size (write_latency_target = 0: the
//             behaviour before batches adapted)
//   default   Options{} as shipped
// For each run: records timed out, the p99 and longest time one log() call
// took (timed by the producer around acquire + fill + commit), and rows/s
// (records stored per second from the first acquire to close()).
//
// With `indexed`, the table gets five secondary indexes before each run
// (on request_id, resource, client_ip, a prefix of detail, and user_id +
// action): every insert then updates six B-trees at scattered places, a
// database slower than the producers by far, with the uneven write times
// of page splits and flushing, as a busy production server has.
//
//   overload <mysql-url> [records=2000000] [runs=5] [plain|indexed]
#include <auditpipe/auditpipe.h>
#include <auditpipe/histogram.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include <mysql.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "mysql_admin.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int producers = 100;

void run_sql(const auditpipe::Url& u, const char* sql) {
  MYSQL* m = bench::connect_admin(u, "overload");
  if (mysql_query(m, sql) != 0) {
    std::fprintf(stderr, "overload: %s: %s\n", sql, mysql_error(m));
    std::exit(1);
  }
  mysql_close(m);
}

bool indexed = false;

struct Result {
  std::uint64_t timed_out = 0, written = 0;
  double p99_us = 0, max_us = 0, blocked_p99_us = 0, rows_per_s = 0;
};

// `rate`: records per second offered by all producers together (0: unpaced).
Result run(const std::string& url, const auditpipe::Url& u, const auditpipe::Options& o,
           long long records, double rate) {
  run_sql(u, "DROP TABLE IF EXISTS bench_audit");
  auditpipe::Logger<bench::AuditEvent> logger(auditpipe::open(url), o);
  if (indexed) {
    run_sql(u,
            "ALTER TABLE bench_audit ADD INDEX (request_id), ADD INDEX (resource), "
            "ADD INDEX (client_ip), ADD INDEX (detail(64)), ADD INDEX (user_id, action)");
  }
  std::vector<std::unique_ptr<auditpipe::Histogram>> calls;
  for (int p = 0; p < producers; ++p) calls.push_back(std::make_unique<auditpipe::Histogram>());
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      const double per_second = rate / producers;
      const auto period = per_second > 0 ? std::chrono::duration<double>(1.0 / per_second)
                                         : std::chrono::duration<double>(0);
      auto next = Clock::now();
      auditpipe::Histogram& h = *calls[static_cast<std::size_t>(p)];
      for (long long i = p; i < records; i += producers) {
        if (per_second > 0) {
          next += std::chrono::duration_cast<Clock::duration>(period);
          if (next > Clock::now()) std::this_thread::sleep_until(next);
        }
        const auto c0 = Clock::now();
        auto r = logger.acquire();
        if (r) {
          bench::fill_event(*r, i);
          (void)r.commit();
        }
        h.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - c0).count()));
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto report = logger.close(std::chrono::minutes(5));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  auditpipe::HistogramSnapshot all;
  for (const auto& h : calls) {
    const auto s = h->snapshot();
    for (std::size_t b = 0; b < all.buckets.size(); ++b) all.buckets[b] += s.buckets[b];
    all.count += s.count;
    all.sum += s.sum;
    all.max = std::max(all.max, s.max);
  }
  Result r;
  r.timed_out = report.stats.timed_out;
  r.written = report.stats.written;
  r.p99_us = static_cast<double>(all.quantile(0.99)) / 1e3;
  r.max_us = static_cast<double>(all.max) / 1e3;
  r.blocked_p99_us = static_cast<double>(report.stats.producer_wait_ns.quantile(0.99)) / 1e3;
  r.rows_per_s = static_cast<double>(r.written) / seconds;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: overload <mysql-url> [records=2000000] [runs=5] [plain|indexed]\n");
    return 2;
  }
  const std::string url = argv[1];
  const auditpipe::Url u = auditpipe::parse_url(url);
  const long long records = argc > 2 ? std::atoll(argv[2]) : 2'000'000;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
  indexed = argc > 4 && std::string(argv[4]) == "indexed";
  auditpipe::diagnostics()->set_level(spdlog::level::err);

  auditpipe::Options fixed;
  fixed.write_latency_target = std::chrono::milliseconds(0);
  const auditpipe::Options shipped;
  // The database's rate, unpaced, with fixed batches (the larger of the
  // two rates, so 3x is at least 3x for both).
  const Result calibration = run(url, u, fixed, std::min(records, 500'000LL), 0);
  const double offered = 3 * calibration.rows_per_s;
  std::printf(
      "database (%s table) stores %.0f rows/s unpaced; offering %.0f rows/s from %d producers\n",
      indexed ? "indexed" : "plain", calibration.rows_per_s, offered, producers);
  std::printf("%-8s %4s %10s %12s %12s %14s %12s\n", "config", "run", "timed_out", "p99_call_us",
              "max_call_us", "p99_blocked_us", "rows_per_s");
  double sum[2] = {0, 0};
  for (int i = 0; i < runs; ++i) {
    for (int c = 0; c < 2; ++c) {
      const int which = (i % 2 == 0) ? c : 1 - c;  // alternate who goes first
      const char* name = which == 0 ? "fixed" : "default";
      const Result r = run(url, u, which == 0 ? fixed : shipped, records, offered);
      sum[which] += r.rows_per_s;
      std::printf("%-8s %4d %10llu %12.0f %12.0f %14.0f %12.0f\n", name, i + 1,
                  static_cast<unsigned long long>(r.timed_out), r.p99_us, r.max_us,
                  r.blocked_p99_us, r.rows_per_s);
      std::fflush(stdout);
    }
  }
  std::printf("mean rows/s: fixed %.0f, default %.0f (default/fixed %.3f); max_wait %lld ms\n",
              sum[0] / runs, sum[1] / runs, sum[1] / sum[0],
              static_cast<long long>(shipped.max_wait.count()));
  return 0;
}
