// auditpipe::metrics_http: an HTTP server for Prometheus, serving the stats
// of one or more loggers on GET /metrics. Any program with a Logger may
// create one; it owns its listening socket and its threads.
//
//   auditpipe::http::MetricsServer server(
//       {{[&] { return orders.stats(); }, {{"logger", "orders"}}},
//        {[&] { return payments.stats(); }, {{"logger", "payments"}}}},
//       {.port = 9464});
//   std::printf("metrics on %s\n", server.url().c_str());
//
// The constructor binds and starts serving; it throws auditpipe::error when
// it cannot (port in use, an address that is not an IP address of this
// host, labels to_prometheus would refuse). The page is
// auditpipe::to_prometheus of every source, rendered per scrape: each
// family's HELP and TYPE once, each logger told apart by its labels.
//
// HTTP: GET and HEAD /metrics (HEAD: the headers alone), Content-Type
// text/plain; version=0.0.4; charset=utf-8; 405 with Allow for other methods
// on /metrics, 404 for other paths. Connections are kept alive between
// scrapes. Scrapes are served concurrently by a fixed number of worker
// threads (MetricsServerOptions::threads); a connection holds a worker
// while it is open, so one that completes no request within the longer of
// idle_timeout and read_timeout (of its opening or its last response) is
// closed, however slowly it sends, and until then takes one worker only. Built on Debian's
// cpp-httplib (libcpp-httplib-dev), which this header does not include.
//
// Thread safety: add() and stop() may be called from any thread, also while
// scrapes are served; the stats callbacks are called from the worker
// threads, several at once (Logger::stats() may be called from any thread). stop() closes
// idle connections at once and returns when the scrapes in progress have
// been answered (their callbacks returned, their responses written within
// write_timeout); the destructor stops. Neither may be called from inside
// a stats callback (stop() there only asks the server to stop).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "auditpipe/export.h"
#include "auditpipe/prometheus.h"
#include "auditpipe/stats.h"

namespace auditpipe::http {

/// One logger on the page: how to read its stats now, and its labels.
struct MetricsSource {
  std::function<Stats()> stats;  ///< called at each scrape, on a worker thread
  MetricLabels labels;           ///< added to each of its series
};

/// How the server listens and how long it waits for clients.
struct MetricsServerOptions {
  /// An IP address of this host (IPv4 or IPv6, no host names: nothing is
  /// looked up). The loopback address by default, so that nothing is exposed
  /// beyond the machine unless asked for; "0.0.0.0" serves every interface.
  std::string address = "127.0.0.1";
  /// 0 picks a free port (port() says which).
  std::uint16_t port = 9464;
  /// Worker threads: concurrent connections served (at least 1). One more
  /// connection than this waits for a worker.
  std::size_t threads = 4;
  /// How long a kept-alive connection may wait for its next request (and a
  /// new one for its first) before it is closed: whole seconds, at least 1.
  std::chrono::seconds idle_timeout{5};
  /// A request must arrive, and a response be taken, at this pace: the
  /// longest wait for any one read or write on a connection.
  std::chrono::milliseconds read_timeout{5000};
  /// The longest wait for any one write of a response.
  std::chrono::milliseconds write_timeout{5000};
};

/// A /metrics endpoint for one or more loggers: serves their stats as one
/// Prometheus page (see the file comment for what a scraper can rely on).
class AUDITPIPE_EXPORT MetricsServer {
 public:
  /// Binds options.address:options.port and serves `sources`. Throws
  /// auditpipe::error (nothing is left listening) for bad options or labels.
  explicit MetricsServer(std::vector<MetricsSource> sources = {},
                         const MetricsServerOptions& options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Adds a logger to the page, from the next scrape on. Throws
  /// auditpipe::error if its labels are refused or another source has the
  /// same label set (the page would be refused), leaving the page unchanged.
  void add(MetricsSource source);

  /// Stops listening, lets the scrapes in progress finish, closes every
  /// connection and joins the threads. Idempotent. In a fork() child of the
  /// process that made the server, it (and the destructor) does nothing:
  /// the listening socket and the threads are the parent's.
  void stop();

  /// The bound port (the free port picked for port 0).
  std::uint16_t port() const;
  /// `http://<address>:<port>/metrics`, IPv6 addresses in brackets.
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace auditpipe::http
