// Prints the Prometheus page of a running logger: two producers block on a
// small pool in front of a real SQLite sink while the page is rendered, so
// the counters, gauges and the producer-wait histogram hold live values
// (and the seal gauges: the table is sealed).
// `promtool check metrics` reads it (tests/CMakeLists.txt).
//
//   metrics_page <directory for the database file>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/prometheus.h"
#include "auditpipe/sqlite/sqlite_sink.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  const auto db = std::filesystem::path(argv[1]) / "metrics_page.db";
  std::filesystem::create_directories(db.parent_path());
  std::filesystem::remove(db);
  auditpipe::Options o;
  o.capacity = 64;
  o.batch_size = 8;
  auditpipe::Logger<testing_support::AuditRow> logger(
      auditpipe::sqlite::open("sqlite://" + db.string() + "?seal=hash"), o);
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (auto r = logger.acquire()) {
          r->message_id = i;
          r->sender = "producer";
          r.commit();
        }
      }
    });
  }
  while (logger.stats().written < 5000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string page = auditpipe::to_prometheus(
      logger.stats(), {{"logger", "payments \"eu\""}, {"region", "eu-west"}});
  for (auto& p : producers) p.join();
  logger.close();
  std::fwrite(page.data(), 1, page.size(), stdout);
  return 0;
}
