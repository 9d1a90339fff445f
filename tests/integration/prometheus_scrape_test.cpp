// A real Prometheus server (Debian's `prometheus`) scraping auditpipe on
// loopback, as a user's would: examples/metrics_endpoint (a process writing
// into SQLite) and a MetricsServer in this test over a logger that wrote a
// known number of rows. The test writes prometheus.yml (scrape_interval
// 1s), starts prometheus on a free loopback port with its TSDB in a
// scratch directory, waits for both targets to be up through
// /api/v1/targets, and queries auditpipe_records_written_total through
// /api/v1/query. ChildProcess and TempDir kill prometheus and the example
// and remove the directory on every exit path.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "audit_row.h"
#include "auditpipe/http/metrics_server.h"
#include "auditpipe/logger.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "child_process.h"
#include "prometheus_text.h"
#include "temp_dir.h"

namespace {

using testing_support::AuditRow;
using testing_support::ChildProcess;
using namespace std::chrono_literals;

// A loopback port free now (bound to port 0, then released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The sample values of an instant query's vector result, by job.
std::map<std::string, double> query(httplib::Client& prometheus, const std::string& q) {
  std::map<std::string, double> out;
  const auto res = prometheus.Get("/api/v1/query", {{"query", q}}, httplib::Headers{});
  if (!res || res->status != 200) return out;
  // {"metric":{...,"job":"inproc",...},"value":[1700000000.1,"1000"]}
  static const std::regex sample(R"re("metric":\{([^}]*)\},"value":\[[0-9.e+]+,"([^"]+)"\])re");
  static const std::regex job(R"re("job":"([^"]+)")re");
  for (std::sregex_iterator it(res->body.begin(), res->body.end(), sample), end; it != end; ++it) {
    std::smatch j;
    const std::string labels = (*it)[1];
    if (std::regex_search(labels, j, job)) out[j[1]] = std::stod((*it)[2]);
  }
  return out;
}

TEST(RealPrometheus, ScrapesTheExampleAndAServerAndReportsTheWrittenCount) {
  if (std::string(AUDITPIPE_TEST_PROMETHEUS).empty()) GTEST_SKIP() << "prometheus not found";
  testing_support::TempDir dir;

  // In this process: a logger that wrote exactly 1234 rows.
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + dir.file("in.db")));
  for (int i = 0; i < 1234; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
  ASSERT_TRUE(logger.flush(30s));
  auditpipe::http::MetricsServerOptions o;
  o.port = 0;
  auditpipe::http::MetricsServer server({{[&] { return logger.stats(); }, {{"logger", "inproc"}}}},
                                        o);

  // The example, writing while it is scraped.
  ChildProcess example({std::string(AUDITPIPE_EXAMPLES_DIR) + "/metrics_endpoint", "--port", "0",
                        "--url", "sqlite://" + dir.file("example.db"), "--rate", "200"});
  ASSERT_TRUE(example.started());
  const std::string line = example.read_line();
  int example_port = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "metrics_endpoint: listening on http://127.0.0.1:%d/metrics",
                        &example_port),
            1)
      << line;

  const int prometheus_port = free_port();
  {
    std::ofstream yml(dir.file("prometheus.yml"));
    yml << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n"
        << "  - job_name: inproc\n    static_configs:\n      - targets: ['127.0.0.1:"
        << server.port() << "']\n"
        << "  - job_name: example\n    static_configs:\n      - targets: ['127.0.0.1:"
        << example_port << "']\n";
  }
  ChildProcess prometheus(
      {AUDITPIPE_TEST_PROMETHEUS, "--config.file=" + dir.file("prometheus.yml"),
       "--storage.tsdb.path=" + dir.file("tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port),
       // No console templates or libraries from /etc; nothing else it reads.
       "--web.console.templates=" + dir.file("consoles"),
       "--web.console.libraries=" + dir.file("console_libraries"), "--log.level=warn"},
      dir.file("prometheus.log"));
  ASSERT_TRUE(prometheus.started());
  const auto log = [&] {
    std::ifstream f(dir.file("prometheus.log"));
    return std::string(std::istreambuf_iterator<char>(f), {});
  };

  httplib::Client api("127.0.0.1", prometheus_port);
  api.set_connection_timeout(1, 0);
  api.set_read_timeout(2, 0);
  const auto deadline = std::chrono::steady_clock::now() + 25s;
  bool up = false;
  while (!up && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(250ms);
    const auto res = api.Get("/api/v1/targets?state=active");
    if (!res || res->status != 200) continue;
    std::size_t healthy = 0;
    for (std::size_t at = 0; (at = res->body.find("\"health\":\"up\"", at)) != std::string::npos;
         ++at)
      ++healthy;
    up = healthy == 2;
  }
  ASSERT_TRUE(up) << "targets not up in time; prometheus log:\n" << log();

  std::map<std::string, double> written;
  while (std::chrono::steady_clock::now() < deadline &&
         (written.size() < 2 || written["example"] <= 0)) {
    written = query(api, "auditpipe_records_written_total");
    if (written.size() < 2 || written["example"] <= 0) std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(written["inproc"], 1234) << "the written count Prometheus stored";
  // The example keeps writing: what Prometheus stored is a value its page
  // had, positive and at most what the page says now.
  ASSERT_GT(written["example"], 0) << log();
  httplib::Client example_client("127.0.0.1", example_port);
  const auto page = example_client.Get("/metrics");
  ASSERT_TRUE(page);
  const testing_support::PromText now(page->body);
  EXPECT_LE(written["example"],
            now.value("auditpipe_records_written_total", {{"logger", "http_requests"}}));
  // Prometheus saw the labels the page gave.
  const auto by_logger = query(api, "auditpipe_records_written_total{logger=\"http_requests\"}");
  EXPECT_EQ(by_logger.count("example"), 1u);

  EXPECT_EQ(prometheus.stop(SIGTERM), 0) << log();
  const int status = example.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the example did not drain";
}

}  // namespace
