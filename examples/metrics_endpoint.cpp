// metrics_endpoint: an audit workload with its stats served for Prometheus.
//
//   metrics_endpoint [--port 9464] [--url sqlite:///tmp/metrics_endpoint.db]
//                    [--rate 2000] [--seconds 0]
//
// Two worker threads log `rate` records a second each into the database at
// `url`, while a minimal blocking HTTP server on 127.0.0.1:<port> answers
// GET /metrics with auditpipe::to_prometheus(logger.stats()). Port 0 picks a
// free one; the first line printed says which. SIGTERM or SIGINT (or
// --seconds) drains the logger and exits: the signal is taken by a thread
// waiting in sigwait(), the signal-safe way to call close().
#include <arpa/inet.h>
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/prometheus.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Request {
  auditpipe::timestamp at;
  std::int64_t request_id = 0;
  std::int32_t status = 0;
  std::int64_t duration_us = 0;
  auditpipe::fixed_string<64> path;
};
constexpr auto describe(auditpipe::type_tag<Request>) {
  return auditpipe::table<Request>(
      "http_requests", AUDITPIPE_COLUMN(Request, at), AUDITPIPE_COLUMN(Request, request_id),
      AUDITPIPE_COLUMN(Request, status), AUDITPIPE_COLUMN(Request, duration_us),
      AUDITPIPE_COLUMN(Request, path));
}

std::string reply(int code, const char* reason, const char* type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

void serve(int client, const auditpipe::Logger<Request>& logger) {
  std::string request;
  char buf[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
  }
  std::string response;
  if (request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0) {
    response = reply(200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                     auditpipe::to_prometheus(logger.stats(), {{"logger", "http_requests"}}));
  } else {
    response = reply(404, "Not Found", "text/plain", "GET /metrics\n");
  }
  std::size_t sent = 0;
  while (sent < response.size()) {
    const ssize_t n = ::send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::close(client);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 9464;
  std::string url = "sqlite:///tmp/metrics_endpoint.db";
  long rate = 2000, seconds = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--port")
      port = std::atoi(argv[i + 1]);
    else if (flag == "--url")
      url = argv[i + 1];
    else if (flag == "--rate")
      rate = std::atol(argv[i + 1]);
    else if (flag == "--seconds")
      seconds = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: metrics_endpoint [--port N] [--url URL] [--rate N] [--seconds N]\n");
      return 2;
    }
  }

  // Before any other thread starts: SIGTERM and SIGINT go to sigwait() only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int yes = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 16) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::fprintf(stderr, "metrics_endpoint: cannot listen on 127.0.0.1:%d: %s\n", port,
                 std::strerror(errno));
    return 1;
  }

  try {
    auditpipe::Options options;
    options.summary_interval = std::chrono::seconds(10);
    auditpipe::Logger<Request> logger(auditpipe::open(url), options);
    std::printf("metrics_endpoint: listening on http://127.0.0.1:%d/metrics\n",
                ntohs(address.sin_port));
    std::fflush(stdout);

    std::atomic<bool> stop{false};
    std::thread waiter([&] {
      int signal = 0;
      sigwait(&signals, &signal);
      stop = true;
      ::shutdown(listener, SHUT_RDWR);  // ends accept()
    });
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        const auto pause = std::chrono::microseconds(rate > 0 ? 1'000'000 / rate : 1000);
        for (std::int64_t i = w; !stop.load(); i += 2) {
          if (auto r = logger.acquire()) {
            r->at = auditpipe::timestamp::now();
            r->request_id = i;
            r->status = i % 50 == 0 ? 500 : 200;
            r->duration_us = 200 + i % 1000;
            r->path = i % 3 == 0 ? "/api/orders" : "/api/users";
            (void)r.commit();
          }
          std::this_thread::sleep_for(pause);
        }
      });
    }
    std::thread timer;
    if (seconds > 0) {
      timer = std::thread([&] {
        for (long s = 0; s < seconds * 10 && !stop.load(); ++s)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!stop.load()) kill(getpid(), SIGTERM);
      });
    }
    while (!stop.load()) {
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;  // shut down, or interrupted
      serve(client, logger);
    }
    for (auto& t : workers) t.join();
    waiter.join();
    if (timer.joinable()) timer.join();
    const auto report = logger.close(std::chrono::seconds(10));
    std::printf("metrics_endpoint: closed; %llu records written, %llu unwritten\n",
                static_cast<unsigned long long>(report.stats.written),
                static_cast<unsigned long long>(report.unwritten));
    ::close(listener);
    return report.unwritten == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrics_endpoint: %s\n", e.what());
    return 1;
  }
}
