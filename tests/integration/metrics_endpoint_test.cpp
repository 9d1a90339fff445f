// examples/metrics_endpoint as a user runs it: started as a process, scraped
// over HTTP on loopback like Prometheus would, its output checked against
// the text format's specification, then stopped with SIGTERM (it must
// drain and exit 0).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "prometheus_text.h"
#include "temp_dir.h"

extern char** environ;

namespace {

std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    response.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return response;
}

TEST(MetricsEndpoint, ServesValidPrometheusTextAndDrainsOnSigterm) {
  testing_support::TempDir dir;
  const std::string program = std::string(AUDITPIPE_EXAMPLES_DIR) + "/metrics_endpoint";
  const std::string url = "sqlite://" + dir.file("metrics.db");
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  const char* args[] = {program.c_str(), "--port", "0",    "--url",
                        url.c_str(),     "--rate", "2000", nullptr};
  pid_t pid = 0;
  ASSERT_EQ(
      posix_spawn(&pid, program.c_str(), &actions, nullptr, const_cast<char**>(args), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  FILE* child_out = ::fdopen(out[0], "r");
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, child_out), nullptr) << "no listening line";
  int port = 0;
  ASSERT_EQ(std::sscanf(line, "metrics_endpoint: listening on http://127.0.0.1:%d/metrics", &port),
            1)
      << line;

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string first = http_get(port, "/metrics");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string second = http_get(port, "/metrics");
  EXPECT_NE(http_get(port, "/other").find("404"), std::string::npos);

  for (const std::string& response : {first, second}) {
    ASSERT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response.substr(0, 200);
    EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  }
  const auto body = [](const std::string& r) { return r.substr(r.find("\r\n\r\n") + 4); };
  const testing_support::PromText a(body(first)), b(body(second));
  std::string errors;
  for (const auto& e : b.errors()) errors += e + "\n";
  EXPECT_TRUE(b.errors().empty()) << errors;
  const std::map<std::string, std::string> label{{"logger", "http_requests"}};
  EXPECT_GT(b.value("auditpipe_records_committed_total", label),
            a.value("auditpipe_records_committed_total", label));
  EXPECT_EQ(b.value("auditpipe_health", {{"state", "ok"}}), 1);
  EXPECT_GT(b.value("auditpipe_pool_capacity_records", label), 0);

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::fclose(child_out);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "did not drain cleanly";
}

}  // namespace
