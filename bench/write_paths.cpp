// write_paths: rows/s through auditpipe into MySQL/MariaDB or PostgreSQL for
// each write path of the sink, batch size and connection count, on the same
// table with the same rows. The numbers behind each sink's default path.
//
//   write_paths <mysql-or-postgresql-url> [rows=300000]
// Prints one line per run and a CSV block (path,batch,connections,rows,seconds,rows_per_s).
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "mysql_admin.h"

namespace {

void drop_table(const std::string& url) {
  const auditpipe::Url u = auditpipe::parse_url(url);
  const auto& h = u.hosts.at(0);
  if (u.scheme == "mysql") {
    MYSQL* m = bench::connect_admin(u, "write_paths");
    mysql_query(m, "DROP TABLE IF EXISTS bench_audit");
    mysql_close(m);
    return;
  }
  const std::string conninfo = "host=" + h.host + " port=" + std::to_string(h.port.value_or(5432)) +
                               " dbname=" + u.path + " user=" + u.user +
                               " password=" + u.password.value_or("");
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::fprintf(stderr, "write_paths: %s\n", PQerrorMessage(c));
    std::exit(1);
  }
  PQclear(PQexec(c, "DROP TABLE IF EXISTS bench_audit"));
  PQfinish(c);
}

struct Run {
  std::string path;
  std::size_t batch;
  unsigned connections;
  long long rows;
  double seconds;
};

Run run(const std::string& base, const std::string& path, std::size_t batch, unsigned connections,
        long long rows) {
  drop_table(base);
  const std::string url = base + (base.find('?') == std::string::npos ? "?" : "&") +
                          "write_path=" + path + "&pool_size=" + std::to_string(connections);
  auditpipe::Options o;
  o.capacity = std::max<std::size_t>(65536, 4 * batch * connections);
  o.batch_size = batch;
  o.writers = connections;
  o.max_wait = std::chrono::seconds(60);
  auditpipe::Logger<bench::AuditEvent> logger(auditpipe::open(url), o);
  // Two producers: enough to keep any path busy on this machine.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      for (long long i = p; i < rows; i += 2) {
        auto r = logger.acquire();
        if (!r) continue;
        bench::fill_event(*r, i);
        (void)r.commit();
      }
    });
  }
  for (auto& t : producers) t.join();
  const auto report = logger.close(std::chrono::minutes(10));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (report.stats.written != static_cast<std::uint64_t>(rows)) {
    std::fprintf(stderr, "write_paths: %s batch %zu: wrote %llu of %lld\n", path.c_str(), batch,
                 static_cast<unsigned long long>(report.stats.written), rows);
  }
  return {path, batch, connections, rows, seconds};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: write_paths <mysql-or-postgresql-url> [rows]\n");
    return 2;
  }
  const std::string url = argv[1];
  const long long rows = argc > 2 ? std::atoll(argv[2]) : 300000;
  auditpipe::diagnostics()->set_level(spdlog::level::warn);
  const bool mysql = url.rfind("mysql:", 0) == 0;
  const std::vector<std::string> paths = mysql
                                             ? std::vector<std::string>{"bulk", "load_data", "text"}
                                             : std::vector<std::string>{"copy", "insert"};
  std::vector<Run> runs;
  for (const auto& path : paths) {
    for (std::size_t batch : {100, 1000, 5000}) {
      for (unsigned connections : {1u, 2u}) {
        runs.push_back(run(url, path, batch, connections, rows));
        const Run& r = runs.back();
        std::printf("%-9s batch %5zu  connections %u  %9.0f rows/s\n", r.path.c_str(), r.batch,
                    r.connections, static_cast<double>(r.rows) / r.seconds);
        std::fflush(stdout);
      }
    }
  }
  std::printf("\npath,batch,connections,rows,seconds,rows_per_s\n");
  for (const Run& r : runs) {
    std::printf("%s,%zu,%u,%lld,%.3f,%.0f\n", r.path.c_str(), r.batch, r.connections, r.rows,
                r.seconds, static_cast<double>(r.rows) / r.seconds);
  }
  drop_table(url);
}
