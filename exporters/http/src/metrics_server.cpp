// MetricsServer (include/auditpipe/http/metrics_server.h): cpp-httplib's
// Server configured for Prometheus scrapes, and the listener thread that
// runs it. The only file that includes httplib.h, so that users of the
// component never need it.
#include "auditpipe/http/metrics_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "auditpipe/status.h"
#include "server_connections.h"

namespace auditpipe::http {

namespace {

constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* metrics_path = "/metrics";

// Set on the server's worker threads, where stop() must not join them.
thread_local bool on_worker_thread = false;

// cpp-httplib's ThreadPool, with each worker marked as one.
class WorkerPool : public httplib::TaskQueue {
 public:
  explicit WorkerPool(std::size_t threads) : pool_(threads) {}
  void enqueue(std::function<void()> job) override {
    pool_.enqueue([job = std::move(job)] {
      on_worker_thread = true;
      job();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
};

[[noreturn]] void refuse(const std::string& what) {
  throw error("auditpipe: metrics server: " + what);
}

// The bind address, checked here: cpp-httplib would resolve a host name
// (a DNS lookup) or report a bad address as a failed bind alone.
bool is_ipv6(const std::string& address) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return false;
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return true;
  refuse("address '" + address +
         "' is not an IP address (such as 127.0.0.1, ::1 or 0.0.0.0); host names are not "
         "looked up");
}

// A GET or HEAD, or another method, has no body to read first.
bool has_body(const httplib::Request& req) {
  return req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
}

void method_not_allowed(httplib::Response& res) {
  res.status = 405;
  res.set_header("Allow", "GET, HEAD");
  res.set_content("405 Method Not Allowed: /metrics answers GET and HEAD\n", "text/plain");
}

}  // namespace

struct MetricsServer::Impl {
  MetricsServerOptions options;
  std::uint16_t port = 0;
  bool ipv6 = false;
  Listening listening;  // port, family and address, once bound
  httplib::Server server;
  std::thread listener;
  // A fork() child has this server's memory, not its threads; its socket is
  // the parent's (stopping it there would shut the parent's listener).
  const pid_t owner = ::getpid();
  std::atomic<bool> listener_done{false};
  std::atomic<bool> connections_shut_down{false};

  // The connections a request is being answered on (peer_key), from
  // routing (a request without a body) or its handler (one with a body,
  // read by then) until the response is written (cpp-httplib's logger).
  std::mutex busy_mutex;
  std::set<std::string> busy;  // guarded by busy_mutex
  // By connection: when it must have completed a request (its opening, as
  // the reaper first saw it, or its last response, plus the longer of
  // idle_timeout and read_timeout). cpp-httplib's read_timeout bounds
  // each read alone: a client sending a header line every few seconds
  // held its worker for as long as it liked, and `threads` of them kept
  // every scrape waiting. The reaper shuts down connections past it.
  std::map<std::string, std::chrono::steady_clock::time_point> due;  // guarded by busy_mutex
  std::chrono::steady_clock::duration request_limit{};
  std::thread reaper;
  std::mutex reaper_mutex;
  std::condition_variable reaper_cv;
  bool reaper_stop = false;  // guarded by reaper_mutex

  void reap_until_stopped() {
    std::unique_lock lock(reaper_mutex);
    while (!reaper_cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return reaper_stop; })) {
      lock.unlock();
      reap();
      lock.lock();
    }
  }
  void reap() {
    const auto now = std::chrono::steady_clock::now();
    const std::vector<Connection> found = connections_of(listening);  // without the lock
    std::vector<const Connection*> overdue;
    {
      std::lock_guard lock(busy_mutex);
      std::map<std::string, std::chrono::steady_clock::time_point> open;
      for (const Connection& c : found) {
        const auto it = due.find(c.peer);
        const auto until = it != due.end() ? it->second : now + request_limit;
        open.emplace(c.peer, until);
        if (now >= until && busy.count(c.peer) == 0) overdue.push_back(&c);
      }
      due = std::move(open);  // closed connections forgotten
    }
    for (const Connection* c : overdue) shut_down_reading(*c, listening);
  }
  void mark_busy(const httplib::Request& req) {
    std::lock_guard lock(busy_mutex);
    busy.insert(peer_key(req.remote_addr, req.remote_port));
  }
  // Tells the reaper to stop; stop_reaper() also waits for it.
  void ask_reaper_to_stop() {
    {
      std::lock_guard lock(reaper_mutex);
      reaper_stop = true;
    }
    reaper_cv.notify_all();
  }
  void stop_reaper() {
    ask_reaper_to_stop();
    if (reaper.joinable()) reaper.join();
  }
  std::mutex join_mutex;  // one stop() joins; another waits for it

  // The page's sources; a scrape renders a copy, so add() never waits for
  // a scrape's callbacks.
  std::mutex sources_mutex;
  std::vector<MetricsSource> sources;  // guarded by sources_mutex

  std::string page() {
    std::vector<MetricsSource> now;
    {
      std::lock_guard lock(sources_mutex);
      now = sources;
    }
    std::vector<LabeledStats> loggers;
    loggers.reserve(now.size());
    for (auto& s : now) loggers.push_back({s.stats(), std::move(s.labels)});
    return to_prometheus(loggers);
  }
};

MetricsServer::MetricsServer(std::vector<MetricsSource> sources,
                             const MetricsServerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  if (options.threads == 0) refuse("threads is 0; at least one worker thread serves scrapes");
  if (options.idle_timeout < std::chrono::seconds(1)) {
    refuse("idle_timeout is below 1 second (cpp-httplib counts it in whole seconds)");
  }
  if (options.read_timeout <= std::chrono::milliseconds::zero() ||
      options.write_timeout <= std::chrono::milliseconds::zero()) {
    refuse("read_timeout and write_timeout must be positive");
  }
  m.ipv6 = is_ipv6(options.address);
  for (auto& s : sources) {
    if (!s.stats) refuse("a source without a stats callback");
  }
  {
    // Labels refused now, not at the first scrape.
    std::vector<LabeledStats> check;
    for (const auto& s : sources) check.push_back({Stats{}, s.labels});
    (void)to_prometheus(check);
  }
  m.sources = std::move(sources);

  httplib::Server& server = m.server;
  const std::size_t threads = options.threads;
  server.new_task_queue = [threads] { return new WorkerPool(threads); };
  // cpp-httplib's default sets SO_REUSEPORT, with which a second server on
  // the same port binds too and takes half the scrapes; SO_REUSEADDR
  // alone allows a restart over connections in TIME_WAIT, and a port in
  // use still fails the bind.
  server.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_address_family(m.ipv6 ? AF_INET6 : AF_INET);
  // Without it, Nagle's algorithm and the scraper's delayed ACK hold each
  // response on a kept-alive connection for 40 ms.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_timeout(options.idle_timeout.count());
  // A scraper reuses its connection for every scrape; cpp-httplib's default
  // (5 requests) would make it reconnect every fifth.
  server.set_keep_alive_max_count(1000);
  server.set_read_timeout(options.read_timeout);
  server.set_write_timeout(options.write_timeout);
  // Nothing posted is read; a body is only drained before the 405.
  server.set_payload_max_length(64 * 1024);

  server.Get(metrics_path, [&m](const httplib::Request& req, httplib::Response& res) {
    m.mark_busy(req);  // (a GET with a body was read under the reaper's limit)
    res.set_content(m.page(), content_type);
  });
  // Other methods on /metrics: 405. One without a body before routing;
  // with a body, after cpp-httplib has read it, so that a kept-alive
  // connection does not take the body for the next request.
  server.set_pre_routing_handler([&m](const httplib::Request& req, httplib::Response& res) {
    // A body is read after this: until then, the reaper's limit holds (a
    // chunked body sent a chunk at a time held a worker for as long).
    if (!has_body(req)) m.mark_busy(req);
    if (req.path == metrics_path && req.method != "GET" && req.method != "HEAD" && !has_body(req)) {
      method_not_allowed(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_logger([&m](const httplib::Request& req, const httplib::Response&) {
    std::lock_guard lock(m.busy_mutex);
    const std::string peer = peer_key(req.remote_addr, req.remote_port);
    m.busy.erase(peer);
    m.due[peer] = std::chrono::steady_clock::now() + m.request_limit;
  });
  const auto not_allowed = [&m](const httplib::Request& req, httplib::Response& res) {
    m.mark_busy(req);
    method_not_allowed(res);
  };
  server.Post(metrics_path, not_allowed);
  server.Put(metrics_path, not_allowed);
  server.Patch(metrics_path, not_allowed);
  server.Delete(metrics_path, not_allowed);
  server.Options(metrics_path, not_allowed);
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      res.set_content("404 Not Found: the metrics are at /metrics\n", "text/plain");
    }
  });
  // A stats callback that throws: a 500 naming it, the server unharmed.
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        res.status = 500;
        res.set_content("500 Internal Server Error: reading the stats failed: " + what + "\n",
                        "text/plain");
      });

  errno = 0;
  int bound = -1;
  if (options.port == 0) {
    bound = server.bind_to_any_port(options.address);
  } else if (server.bind_to_port(options.address, options.port)) {
    bound = options.port;
  }
  if (bound <= 0) {
    const int why = errno;
    std::string message =
        "cannot listen on " + options.address + ":" + std::to_string(options.port);
    if (why != 0) message += ": " + std::string(std::strerror(why));
    if (why == EADDRINUSE) message += " (another program has the port; choose another, or 0)";
    refuse(message);
  }
  m.port = static_cast<std::uint16_t>(bound);
  m.listening = {m.port, m.ipv6, options.address};
  m.request_limit =
      std::max<std::chrono::steady_clock::duration>(options.idle_timeout, options.read_timeout);
  m.listener = std::thread([&m] {
    m.server.listen_after_bind();
    m.listener_done = true;
  });
  // stop() before the listener runs would be lost (cpp-httplib's stop()
  // acts on a running server only): return once it runs.
  while (!server.is_running() && !m.listener_done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  try {
    m.reaper = std::thread([&m] { m.reap_until_stopped(); });
  } catch (const std::system_error& e) {
    stop();
    refuse(std::string("cannot start a thread: ") + e.what());
  }
}

MetricsServer::~MetricsServer() {
  if (::getpid() != impl_->owner) {
    // In a fork() child: left alone, as stop() leaves it; destroying it
    // would join a listener thread the child does not have.
    (void)impl_.release();
    return;
  }
  stop();
}

void MetricsServer::add(MetricsSource source) {
  if (!source.stats) refuse("a source without a stats callback");
  std::lock_guard lock(impl_->sources_mutex);
  std::vector<LabeledStats> check;
  for (const auto& s : impl_->sources) check.push_back({Stats{}, s.labels});
  check.push_back({Stats{}, source.labels});
  (void)to_prometheus(check);
  impl_->sources.push_back(std::move(source));
}

void MetricsServer::stop() {
  Impl& m = *impl_;
  if (::getpid() != m.owner) return;  // the parent's server (Impl::owner)
  m.server.stop();
  if (!m.connections_shut_down.exchange(true)) {
    // Each idle connection's wait ends at once: shut down for reading, a
    // worker waiting for the next request on it sees the end
    // (cpp-httplib's stop() leaves kept-alive connections open until
    // idle_timeout). Those a request is being answered on are left alone
    // (cpp-httplib would not write to a socket shut down for reading); it
    // closes them after the response, the server being stopped.
    const std::vector<Connection> open = connections_of(m.listening);
    std::lock_guard lock(m.busy_mutex);
    for (const Connection& c : open) {
      if (m.busy.count(c.peer) == 0) shut_down_reading(c, m.listening);
    }
  }
  m.ask_reaper_to_stop();
  // On a worker, joining would wait for this very thread; the destructor
  // joins later.
  if (on_worker_thread) return;
  std::lock_guard lock(m.join_mutex);
  m.stop_reaper();
  if (m.listener.joinable()) m.listener.join();
}

std::uint16_t MetricsServer::port() const {
  return impl_->port;
}

std::string MetricsServer::url() const {
  const std::string host =
      impl_->ipv6 ? "[" + impl_->options.address + "]" : impl_->options.address;
  return "http://" + host + ":" + std::to_string(impl_->port) + metrics_path;
}

}  // namespace auditpipe::http
