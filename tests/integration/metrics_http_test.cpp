// auditpipe::metrics_http (exporters/http) as a scraper meets it: real
// HTTP over loopback, with cpp-httplib's client and with raw sockets where
// the bytes on the wire are the point (HEAD's missing body, two requests on
// one connection, a client that sends nothing). The page is checked with
// the text-format parser (tests/support/prometheus_text.h) and promtool.
#include "auditpipe/http/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "collecting_sink.h"
#include "prometheus_text.h"
#include "raw_http.h"
#include "temp_dir.h"

namespace {

using auditpipe::http::MetricsServer;
using auditpipe::http::MetricsServerOptions;
using testing_support::AuditRow;
using testing_support::PromText;
using testing_support::RawHttp;
using namespace std::chrono_literals;

constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";

MetricsServerOptions any_port() {
  MetricsServerOptions o;
  o.port = 0;
  return o;
}

void write_rows(auditpipe::Logger<AuditRow>& logger, int n) {
  for (int i = 0; i < n; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    r->sender = "s";
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
  ASSERT_TRUE(logger.flush(30s));
}

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsHttp, GetServesThePageOfALoggerWritingIntoSqlite) {
  testing_support::TempDir dir;
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + dir.file("m.db")));
  write_rows(logger, 321);
  MetricsServer server({{[&] { return logger.stats(); }, {{"logger", "orders"}}}}, any_port());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");

  httplib::Client client("127.0.0.1", server.port());
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), content_type);
  const PromText page(res->body);
  EXPECT_TRUE(page.errors().empty()) << joined(page.errors()) << res->body;
  EXPECT_EQ(page.value("auditpipe_records_written_total", {{"logger", "orders"}}), 321);
  EXPECT_EQ(page.value("auditpipe_health", {{"logger", "orders"}, {"state", "ok"}}), 1);
  // A query string is no other resource.
  const auto with_query = client.Get("/metrics?x=1");
  ASSERT_TRUE(with_query);
  EXPECT_EQ(with_query->status, 200);
}

TEST(MetricsHttp, HeadAnswersTheHeadersWithoutABody) {
  MetricsServer server({{[] { return auditpipe::Stats{}; }, {{"logger", "a"}}}}, any_port());
  RawHttp c(static_cast<int>(server.port()));
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  // Anything after the headers within 300 ms counts as a body.
  const auto head = c.read_response(true, 10s, 300ms);
  EXPECT_EQ(head.status, 200) << head.head;
  EXPECT_TRUE(head.has_header(std::string("Content-Type: ") + content_type)) << head.head;
  EXPECT_EQ(head.body, "") << "HEAD got a body";
  // And the connection still serves a GET after it.
  ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto get = c.read_response();
  EXPECT_EQ(get.status, 200);
  EXPECT_NE(get.body.find("auditpipe_records_written_total{logger=\"a\"} 0\n"), std::string::npos)
      << get.body;
}

TEST(MetricsHttp, KeepsTheConnectionAliveBetweenScrapes) {
  MetricsServer server({{[] { return auditpipe::Stats{}; }, {}}}, any_port());
  RawHttp c(static_cast<int>(server.port()));
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) << "request " << i;
    const auto r = c.read_response();
    ASSERT_EQ(r.status, 200) << "request " << i << " on the same connection: " << r.head;
    EXPECT_FALSE(r.has_header("Connection: close")) << r.head;
    EXPECT_NE(r.body.find("# TYPE auditpipe_records_written_total counter"), std::string::npos);
  }
}

// Each open connection holds a worker; clients that connect and send
// nothing (or half a request) must not keep a scrape from being answered,
// and are closed after idle_timeout.
TEST(MetricsHttp, AnIdleConnectionDoesNotBlockAScrape) {
  MetricsServerOptions o = any_port();
  o.threads = 3;
  o.idle_timeout = 2s;
  o.read_timeout = 2s;
  MetricsServer server({{[] { return auditpipe::Stats{}; }, {}}}, o);
  const int port = static_cast<int>(server.port());
  RawHttp silent(port), half(port);
  ASSERT_TRUE(silent.connected() && half.connected());
  ASSERT_TRUE(half.send("GET /metr"));
  std::this_thread::sleep_for(200ms);  // both taken by workers

  const auto start = std::chrono::steady_clock::now();
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(1, 0);
  client.set_connection_timeout(1, 0);
  const auto res = client.Get("/metrics");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(res) << httplib::to_string(res.error()) << ": the idle connections blocked it";
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(took, 1s);
  // Neither holds its worker for ever.
  EXPECT_TRUE(silent.closed_within(4s)) << "a silent client kept its connection";
  EXPECT_TRUE(half.closed_within(4s)) << "a half-sent request kept its connection";
}

// cpp-httplib's read_timeout bounds each read alone: clients sending a
// header line every half second held their workers for as long as they
// went on, and as many of them as there are workers kept every scrape
// waiting. A connection that completes no request within the longer of
// idle_timeout and read_timeout is closed, however it dribbles. A body
// sent a chunk at a time likewise (cpp-httplib reads it after routing, with
// no limit on a chunked one), to /metrics and elsewhere.
TEST(MetricsHttp, ClientsDribblingARequestAreClosedAndTheScrapeIsServed) {
  MetricsServerOptions o = any_port();
  o.threads = 3;
  o.idle_timeout = 2s;
  o.read_timeout = 1s;
  MetricsServer server({{[] { return auditpipe::Stats{}; }, {}}}, o);
  const int port = static_cast<int>(server.port());
  // One chunked POST of each kind first, alone: cpp-httplib builds static
  // parts (its regexes) at the first, and TSan, which does not see the
  // uninstrumented library's inlined guard of a static, took two workers
  // meeting there for a race.
  for (const char* path : {"/metrics", "/elsewhere"}) {
    RawHttp first(port);
    ASSERT_TRUE(first.send(
        std::string("POST ") + path +
        " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"));
    EXPECT_NE(first.read_response().status, 0) << path;
  }
  RawHttp a(port), b(port), c(port);
  ASSERT_TRUE(a.connected() && b.connected() && c.connected());
  ASSERT_TRUE(a.send("GET /metrics HTTP/1.1\r\n"));
  const std::string chunked = " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(b.send("POST /metrics" + chunked) && c.send("POST /elsewhere" + chunked));
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    for (int i = 0; i < 60 && !done; ++i) {  // 30 s at most
      std::this_thread::sleep_for(500ms);
      a.send("X-Slow-" + std::to_string(i) + ": 1\r\n");
      b.send("1\r\nx\r\n");
      c.send("1\r\nx\r\n");
    }
  });
  std::this_thread::sleep_for(300ms);  // both taken by the two workers

  const auto start = std::chrono::steady_clock::now();
  httplib::Client client("127.0.0.1", server.port());
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(10, 0);
  const auto res = client.Get("/metrics");
  const auto took = std::chrono::steady_clock::now() - start;
  done = true;
  dribble.join();
  ASSERT_TRUE(res) << httplib::to_string(res.error()) << ": the dribbling clients blocked it";
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(took, 6s) << "the limit is 2 s";
  EXPECT_TRUE(a.closed_within(1s)) << "a client dribbling its headers kept its connection";
  EXPECT_TRUE(b.closed_within(1s)) << "a client dribbling a body kept its connection";
  EXPECT_TRUE(c.closed_within(1s)) << "a client dribbling a body kept its connection";
}

TEST(MetricsHttp, OtherPathsAre404AndOtherMethods405) {
  MetricsServer server({{[] { return auditpipe::Stats{}; }, {}}}, any_port());
  httplib::Client client("127.0.0.1", server.port());
  const auto other = client.Get("/other");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_NE(other->body.find("/metrics"), std::string::npos) << other->body;
  const auto root = client.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 404);
  const auto post = client.Post("/metrics", "x=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  for (const char* method : {"DELETE", "OPTIONS", "PUT"}) {
    RawHttp c(static_cast<int>(server.port()));
    ASSERT_TRUE(c.send(std::string(method) + " /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto r = c.read_response();
    EXPECT_EQ(r.status, 405) << method << ": " << r.head;
    EXPECT_TRUE(r.has_header("Allow: GET, HEAD")) << method << ": " << r.head;
  }
  // A refused POST's body is read, not taken for the next request.
  RawHttp c(static_cast<int>(server.port()));
  ASSERT_TRUE(c.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  EXPECT_EQ(c.read_response().status, 405);
  ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(MetricsHttp, TwoLoggersShareOnePageToldApartByALabel) {
  auto sink_a = std::make_shared<testing_support::CollectingSink>();
  auto sink_b = std::make_shared<testing_support::CollectingSink>();
  auditpipe::Logger<AuditRow> orders(sink_a), payments(sink_b);
  write_rows(orders, 5);
  write_rows(payments, 9);
  MetricsServer server({{[&] { return orders.stats(); }, {{"logger", "orders"}}}}, any_port());
  server.add({[&] { return payments.stats(); }, {{"logger", "payments"}}});
  // A third with a label set already on the page is refused; the page stays.
  const std::string refused = error_of([&] {
    server.add({[&] { return payments.stats(); }, {{"logger", "orders"}}});
  });
  EXPECT_NE(refused.find("distinct label set"), std::string::npos) << refused;
  EXPECT_NE(error_of([&] {
              server.add({[] { return auditpipe::Stats{}; }, {{"le", "x"}}});
            }).find("label 'le'"),
            std::string::npos);

  httplib::Client client("127.0.0.1", server.port());
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  const PromText page(res->body);
  EXPECT_TRUE(page.errors().empty()) << joined(page.errors()) << res->body;
  EXPECT_EQ(page.value("auditpipe_records_written_total", {{"logger", "orders"}}), 5);
  EXPECT_EQ(page.value("auditpipe_records_written_total", {{"logger", "payments"}}), 9);
  for (const std::string family : {"auditpipe_records_written_total", "auditpipe_health",
                                   "auditpipe_batch_size_records", "auditpipe_build_info"}) {
    for (const std::string kind : {"# HELP ", "# TYPE "}) {
      const std::string line = kind + family + " ";
      const auto first = res->body.find(line);
      ASSERT_NE(first, std::string::npos) << line;
      EXPECT_EQ(res->body.find(line, first + 1), std::string::npos) << "twice: " << line;
    }
  }
  std::size_t series = 0;
  for (std::size_t at = 0;
       (at = res->body.find("\nauditpipe_records_written_total{", at)) != std::string::npos; ++at)
    ++series;
  EXPECT_EQ(series, 2u);
}

TEST(MetricsHttp, ConstructionErrorsAreAuditpipeErrors) {
  MetricsServer first({}, any_port());
  MetricsServerOptions same;
  same.port = first.port();
  const std::string in_use = error_of([&] { MetricsServer second({}, same); });
  EXPECT_NE(in_use.find("auditpipe: metrics server: cannot listen on 127.0.0.1:" +
                        std::to_string(first.port())),
            std::string::npos)
      << in_use;
  EXPECT_NE(in_use.find("in use"), std::string::npos) << in_use;

  MetricsServerOptions bad = any_port();
  bad.address = "localhost";
  EXPECT_NE(error_of([&] { MetricsServer s({}, bad); }).find("'localhost' is not an IP address"),
            std::string::npos);
  bad.address = "192.0.2.1";  // an address, but not this host's (TEST-NET-1)
  EXPECT_NE(error_of([&] { MetricsServer s({}, bad); }).find("cannot listen on 192.0.2.1:0"),
            std::string::npos);
  MetricsServerOptions no_threads = any_port();
  no_threads.threads = 0;
  EXPECT_NE(error_of([&] { MetricsServer s({}, no_threads); }).find("threads is 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              MetricsServer s({{[] { return auditpipe::Stats{}; }, {{"a", "1"}}},
                               {[] { return auditpipe::Stats{}; }, {{"a", "1"}}}},
                              any_port());
            }).find("both have {a=\"1\"}"),
            std::string::npos);
}

// stop() while a stats callback is running returns once it has finished,
// from any thread, and twice at once; the scrape in progress is answered.
TEST(MetricsHttp, StopWhileAScrapeIsInProgressReturns) {
  std::promise<void> entered;
  std::atomic<bool> once{false};
  auto server = std::make_unique<MetricsServer>(
      std::vector<auditpipe::http::MetricsSource>{{[&] {
                                                     if (!once.exchange(true)) entered.set_value();
                                                     std::this_thread::sleep_for(500ms);
                                                     return auditpipe::Stats{};
                                                   },
                                                   {}}},
      any_port());
  const int port = static_cast<int>(server->port());
  auto scrape = std::async(std::launch::async, [port] {
    httplib::Client client("127.0.0.1", port);
    const auto res = client.Get("/metrics");
    return res ? res->status : -1;
  });
  entered.get_future().wait();
  const auto start = std::chrono::steady_clock::now();
  std::thread other([&] { server->stop(); });
  server->stop();
  other.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(scrape.get(), 200);
  server->stop();  // idempotent
  RawHttp after(port);
  EXPECT_FALSE(after.connected()) << "still listening after stop()";
  server.reset();
}

// A scraper keeps its connection open between scrapes: stopping must not
// wait for it to time out.
TEST(MetricsHttp, TheDestructorStopsWithAClientConnected) {
  int port = 0;
  std::unique_ptr<RawHttp> idle;
  const auto start = std::chrono::steady_clock::now();
  {
    MetricsServerOptions o = any_port();
    o.idle_timeout = 10s;
    MetricsServer server({}, o);
    port = server.port();
    idle = std::make_unique<RawHttp>(port);
    ASSERT_TRUE(idle->connected());
    std::this_thread::sleep_for(200ms);  // a worker holds it
  }
  // Not idle_timeout: the held connection is closed at once.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_TRUE(idle->closed_within(100ms)) << "the server kept the connection";
  EXPECT_FALSE(RawHttp(port).connected());
}

// A fork() child has the server's memory, not its threads; the listening
// socket is the parent's. Stopping the server there shut the parent's
// listener down, and the child's join waited for a thread it never had.
// The child's stop() and destructor now leave it alone.
TEST(MetricsHttp, AForkedChildLeavesTheParentsServerServing) {
  testing_support::TempDir dir;
  auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite://" + dir.file("f.db")));
  write_rows(logger, 7);
  auto server = std::make_unique<MetricsServer>(
      std::vector<auditpipe::http::MetricsSource>{{[&] { return logger.stats(); }, {}}},
      any_port());
  const int port = server->port();
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    server->stop();
    server.reset();
    _exit(0);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 300 && (done = waitpid(child, &status, WNOHANG)) == 0; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child's stop() or destructor did not return";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  httplib::Client client("127.0.0.1", port);
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << "the parent's server stopped serving: " << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(PromText(res->body).value("auditpipe_records_written_total", {}), 7);
}

TEST(MetricsHttp, AThrowingStatsCallbackIsA500) {
  MetricsServer server({{[]() -> auditpipe::Stats { throw std::runtime_error("db gone"); }, {}}},
                       any_port());
  httplib::Client client("127.0.0.1", server.port());
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_NE(res->body.find("db gone"), std::string::npos) << res->body;
}

// promtool, Prometheus' own linter, accepts a served page of two loggers.
TEST(MetricsHttp, PromtoolAcceptsTheServedPage) {
  if (std::string(AUDITPIPE_TEST_PROMTOOL).empty()) GTEST_SKIP() << "promtool not found";
  testing_support::TempDir dir;
  auditpipe::Logger<AuditRow> a(auditpipe::sqlite::open("sqlite://" + dir.file("a.db")));
  auditpipe::Logger<AuditRow> b(auditpipe::sqlite::open("sqlite://" + dir.file("b.db")));
  write_rows(a, 10);
  MetricsServer server({{[&] { return a.stats(); }, {{"logger", "a"}}},
                        {[&] { return b.stats(); }, {{"logger", "b"}}}},
                       any_port());
  httplib::Client client("127.0.0.1", server.port());
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  const std::string page_file = dir.file("page.txt"), out_file = dir.file("promtool.txt");
  FILE* f = std::fopen(page_file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(res->body.data(), 1, res->body.size(), f);
  std::fclose(f);
  const std::string command = std::string(AUDITPIPE_TEST_PROMTOOL) + " check metrics < " +
                              page_file + " > " + out_file + " 2>&1";
  const int rc = std::system(command.c_str());
  std::string out;
  if (FILE* o = std::fopen(out_file.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, o)) > 0) out.append(buf, n);
    std::fclose(o);
  }
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "promtool's findings";
}

}  // namespace
