// metrics_endpoint: an audit workload with its stats served for Prometheus
// by auditpipe::metrics_http.
//
//   metrics_endpoint [--port 9464] [--url sqlite:///tmp/metrics_endpoint.db]
//                    [--rate 2000] [--seconds 0]
//
// Two worker threads log `rate` records a second each into the database at
// `url`, while an auditpipe::http::MetricsServer on 127.0.0.1:<port> serves
// GET /metrics (the logger's series labelled logger="http_requests"). Port
// 0 picks a free one; the first line printed says which. SIGTERM or SIGINT
// (or --seconds) stops the server and drains the logger: the signal is
// taken by a thread waiting in sigwait(), the signal-safe way to call
// close().
#include <auditpipe/auditpipe.h>
#include <auditpipe/http/metrics_server.h>
#include <auditpipe/open.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

int main(int argc, char** argv) {
  int port = 9464;
  std::string url = "sqlite:///tmp/metrics_endpoint.db";
  long rate = 2000, seconds = 0;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    // A flag without its value (or --help) is a usage error, not a default.
    if (i + 1 == argc) flag.clear();
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
  if (port < 0 || port > 65535) {
    std::fprintf(stderr, "metrics_endpoint: --port %d is not a port (0 picks a free one)\n", port);
    return 2;
  }

  // Before any other thread starts: SIGTERM and SIGINT go to sigwait() only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    auditpipe::Options options;
    options.summary_interval = std::chrono::seconds(10);
    auditpipe::Logger<Request> logger(auditpipe::open(url), options);
    auditpipe::http::MetricsServer server(
        {{[&] { return logger.stats(); }, {{"logger", "http_requests"}}}},
        {.port = static_cast<std::uint16_t>(port)});
    std::printf("metrics_endpoint: listening on %s\n", server.url().c_str());
    std::fflush(stdout);

    std::atomic<bool> stop{false};
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
    int signal = 0;
    sigwait(&signals, &signal);
    stop = true;
    for (auto& t : workers) t.join();
    if (timer.joinable()) timer.join();
    // The server reads the logger: it stops before the logger closes.
    server.stop();
    const auto report = logger.close(std::chrono::seconds(10));
    std::printf("metrics_endpoint: closed; %llu records written, %llu unwritten\n",
                static_cast<unsigned long long>(report.stats.written),
                static_cast<unsigned long long>(report.unwritten));
    return report.unwritten == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrics_endpoint: %s\n", e.what());
    return 1;
  }
}
