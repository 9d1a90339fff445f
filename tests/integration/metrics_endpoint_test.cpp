// examples/metrics_endpoint as a user runs it: started as a process, scraped
// over HTTP on loopback like Prometheus would (while another client holds
// a connection open and sends nothing, which blocked every scrape of the
// example's old hand-written server), its output checked against the text
// format's specification, then stopped with SIGTERM (it must drain and
// exit 0).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "child_process.h"
#include "prometheus_text.h"
#include "raw_http.h"
#include "temp_dir.h"

namespace {

using testing_support::RawHttp;
using testing_support::RawResponse;

RawResponse get(int port, const std::string& method, const std::string& path) {
  RawHttp c(port);
  if (!c.connected()) return {};
  c.send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  return c.read_response(method == "HEAD", std::chrono::seconds(3));
}

TEST(MetricsEndpoint, ServesValidPrometheusTextAndDrainsOnSigterm) {
  testing_support::TempDir dir;
  const std::string url = "sqlite://" + dir.file("metrics.db");
  testing_support::ChildProcess child({std::string(AUDITPIPE_EXAMPLES_DIR) + "/metrics_endpoint",
                                       "--port", "0", "--url", url, "--rate", "2000"});
  ASSERT_TRUE(child.started());
  const std::string line = child.read_line();
  int port = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "metrics_endpoint: listening on http://127.0.0.1:%d/metrics",
                        &port),
            1)
      << line;

  RawHttp idle(port);  // connected, sends nothing
  ASSERT_TRUE(idle.connected());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const RawResponse first = get(port, "GET", "/metrics");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const RawResponse second = get(port, "GET", "/metrics");
  EXPECT_EQ(get(port, "GET", "/other").status, 404);
  const RawResponse head = get(port, "HEAD", "/metrics");
  EXPECT_EQ(head.status, 200) << head.head;
  EXPECT_EQ(get(port, "DELETE", "/metrics").status, 405);

  for (const RawResponse& response : {first, second}) {
    ASSERT_EQ(response.status, 200) << "a scrape was not answered: " << response.head;
    EXPECT_TRUE(response.has_header("Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        << response.head;
  }
  const testing_support::PromText a(first.body), b(second.body);
  std::string errors;
  for (const auto& e : b.errors()) errors += e + "\n";
  EXPECT_TRUE(b.errors().empty()) << errors;
  const std::map<std::string, std::string> label{{"logger", "http_requests"}};
  EXPECT_GT(b.value("auditpipe_records_committed_total", label),
            a.value("auditpipe_records_committed_total", label));
  EXPECT_EQ(b.value("auditpipe_health", {{"state", "ok"}}), 1);
  EXPECT_GT(b.value("auditpipe_pool_capacity_records", label), 0);

  const int status = child.stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "did not drain cleanly";
}

}  // namespace
