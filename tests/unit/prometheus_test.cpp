// The Prometheus rendering of stats, checked by a parser of the text format
// written from its specification (tests/support/prometheus_text.h); and the
// parser itself, shown to reject what the format forbids.
#include "auditpipe/prometheus.h"

#include <gtest/gtest.h>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"
#include "prometheus_text.h"

namespace {

using testing_support::PromText;

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

TEST(Prometheus, RendersStatsInTheTextFormat) {
  auto sink = std::make_shared<testing_support::CollectingSink>();
  auditpipe::Logger<testing_support::AuditRow> logger(sink);
  for (int i = 0; i < 250; ++i) {
    auto r = logger.acquire();
    r->sender = i == 7 ? std::string(100, 'x') : std::string("s");
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
  ASSERT_TRUE(logger.flush(std::chrono::seconds(30)));
  auto stats = logger.stats();
  auditpipe::ConnectionPoolStats pool;
  pool.active = 1;
  pool.idle = 3;
  pool.created = 4;
  pool.servers = {"db1:3306", "db1:3306", "db1:3306", "db2:3306"};
  stats.connection_pool = pool;
  const std::string text = auditpipe::to_prometheus(stats, {{"logger", "pay\"ments\\\n"}});
  const PromText parsed(text);
  EXPECT_TRUE(parsed.errors().empty()) << joined(parsed.errors()) << text;

  const std::map<std::string, std::string> label{{"logger", "pay\"ments\\\n"}};
  EXPECT_EQ(parsed.value("auditpipe_records_committed_total", label), 250);
  EXPECT_EQ(parsed.value("auditpipe_records_written_total", label), 250);
  EXPECT_EQ(parsed.value("auditpipe_connection_pool_idle_connections", label), 3);
  // Which node each connection is on (a cluster).
  EXPECT_EQ(
      parsed.value("auditpipe_connection_pool_server_connections", {{"db_server", "db1:3306"}}), 3);
  EXPECT_EQ(
      parsed.value("auditpipe_connection_pool_server_connections", {{"db_server", "db2:3306"}}), 1);
  EXPECT_EQ(parsed.value("auditpipe_health", {{"state", "ok"}}), 1);
  EXPECT_EQ(parsed.value("auditpipe_health", {{"state", "down"}}), 0);
  EXPECT_EQ(parsed.value("auditpipe_batch_size_records_count", label),
            static_cast<double>(stats.batches));
  EXPECT_EQ(parsed.value("auditpipe_batch_size_records_sum", label), 250);
  EXPECT_EQ(parsed.value("auditpipe_batch_size_records_bucket", {{"le", "+Inf"}}),
            static_cast<double>(stats.batches));
  for (const auto& [name, family] : parsed.families()) {
    EXPECT_EQ(name.rfind("auditpipe_", 0), 0u) << name;
    if (family.type == "counter") {
      EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
    }
    EXPECT_FALSE(family.help.empty()) << name;
  }
  EXPECT_THROW(auditpipe::to_prometheus(stats, {{"bad-name", "x"}}), auditpipe::error);
}

TEST(Prometheus, TheCheckerRejectsWhatTheFormatForbids) {
  const char* bad[] = {
      "9metric 1\n",                                // name starts with a digit
      "m{l=\"unterminated} 1\n",                    // unterminated label value
      "m{l=\"a\\x\"} 1\n",                          // invalid escape
      "m one\n",                                    // not a number
      "# TYPE m counter\n# TYPE m counter\nm 1\n",  // second TYPE
      "m 1\n# TYPE m counter\n",                    // TYPE after samples
      "a 1\nb 1\na 2\n",                            // families interleaved
      // (One literal in two pieces: the parentheses tell clang it is meant.)
      ("# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 3\nh_bucket{le=\"+Inf\"} "
       "5\nh_sum 1\nh_count 5\n"),                                          // not cumulative
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",     // no +Inf
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",  // _count differs
      "m 1",                                                                // no final newline
  };
  for (const char* text : bad) EXPECT_FALSE(PromText(text).errors().empty()) << text;
  EXPECT_TRUE(
      PromText(
          "# HELP m a \\\\ help\\n\n# TYPE m gauge\nm{a=\"x\",b=\"y\\\"z\"} -Inf 1700000000000\n")
          .errors()
          .empty());
}

// The message of the auditpipe::error to_prometheus throws for `labels`,
// or "" if it renders them.
std::string refusal(const auditpipe::MetricLabels& labels) {
  try {
    auditpipe::to_prometheus(auditpipe::Stats{}, labels);
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

// Every label Prometheus would refuse the page for is refused at the call,
// naming the label and why; a broken page is never produced.
TEST(Prometheus, LabelsPrometheusWouldRefuseAreRefusedAtTheCall) {
  const struct {
    auditpipe::MetricLabels labels;
    const char* label;
    const char* why;
  } cases[] = {
      {{{"le", "x"}}, "'le'", "the page itself uses"},
      {{{"state", "x"}}, "'state'", "the page itself uses"},
      {{{"version", "x"}}, "'version'", "the page itself uses"},
      {{{"__name__", "x"}}, "'__name__'", "starts with '__'"},
      {{{"__meta", "x"}}, "'__meta'", "starts with '__'"},
      {{{"bad-name", "x"}}, "'bad-name'", "[a-zA-Z_][a-zA-Z0-9_]*"},
      {{{"9lives", "x"}}, "'9lives'", "[a-zA-Z_][a-zA-Z0-9_]*"},
      {{{"", "x"}}, "''", "is empty"},
      {{{"logger", "a"}, {"region", "b"}, {"logger", "c"}}, "'logger'", "given twice"},
      {{{"logger", "caf\xc3"}}, "'logger'", "not valid UTF-8"},
      {{{"logger", "\xff"}}, "'logger'", "not valid UTF-8"},
      {{{"logger", "\xed\xa0\x80"}}, "'logger'", "not valid UTF-8"},  // a surrogate
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.labels);
    EXPECT_NE(message.find(std::string("label ") + c.label), std::string::npos) << message;
    EXPECT_NE(message.find(c.why), std::string::npos) << message;
    EXPECT_EQ(message.rfind("auditpipe: ", 0), 0u) << message;
  }
  // What the format allows passes, escaped.
  EXPECT_EQ(refusal({{"logger", "caf\xc3\xa9 \"q\" \\ \n"}, {"_x9", ""}, {"Region", "eu"}}), "");
  const std::string text =
      auditpipe::to_prometheus(auditpipe::Stats{}, {{"logger", "caf\xc3\xa9 \"q\" \\ \n"}});
  EXPECT_NE(text.find(R"(logger="café \"q\" \\ \n")"), std::string::npos) << text;
}

// Several loggers on one page: each family's HELP and TYPE once, a series
// per logger told apart by its labels, the page valid for the parser.
TEST(Prometheus, SeveralLoggersShareOnePage) {
  auditpipe::Stats orders, payments;
  orders.written = 7;
  payments.written = 11;
  auditpipe::ConnectionPoolStats pool;
  pool.created = 2;
  payments.connection_pool = pool;  // a family only the second logger has
  const std::string text = auditpipe::to_prometheus(
      {{orders, {{"logger", "orders"}}}, {payments, {{"logger", "payments"}, {"db", "main"}}}});
  const PromText parsed(text);
  EXPECT_TRUE(parsed.errors().empty()) << joined(parsed.errors()) << text;
  EXPECT_EQ(parsed.value("auditpipe_records_written_total", {{"logger", "orders"}}), 7);
  EXPECT_EQ(parsed.value("auditpipe_records_written_total", {{"logger", "payments"}}), 11);
  EXPECT_EQ(parsed.value("auditpipe_connection_pool_created_total", {{"logger", "payments"}}), 2);
  for (const char* family : {"auditpipe_records_written_total", "auditpipe_health",
                             "auditpipe_write_duration_seconds", "auditpipe_build_info"}) {
    for (const char* kind : {"# HELP ", "# TYPE "}) {
      const std::string line = std::string(kind) + family + " ";
      const auto first = text.find(line);
      ASSERT_NE(first, std::string::npos) << line;
      EXPECT_EQ(text.find(line, first + 1), std::string::npos) << "second " << line;
    }
  }
  // One logger alone renders as to_prometheus(stats, labels) does.
  EXPECT_EQ(auditpipe::to_prometheus({{orders, {{"logger", "orders"}}}}),
            auditpipe::to_prometheus(orders, {{"logger", "orders"}}));
}

TEST(Prometheus, LoggersOnOnePageNeedDistinctLabelSets) {
  const auto page_refusal = [](const std::vector<auditpipe::LabeledStats>& loggers) -> std::string {
    try {
      (void)auditpipe::to_prometheus(loggers);
    } catch (const auditpipe::error& e) {
      return e.what();
    }
    return "";
  };
  const auditpipe::Stats s{};
  // The same set, in another order.
  std::string message =
      page_refusal({{s, {{"logger", "a"}, {"db", "x"}}}, {s, {{"db", "x"}, {"logger", "a"}}}});
  EXPECT_NE(message.find("loggers 0 and 1 both have"), std::string::npos) << message;
  EXPECT_NE(message.find("distinct label set"), std::string::npos) << message;
  // Two loggers without labels collide as well.
  message = page_refusal({{s, {}}, {s, {}}});
  EXPECT_NE(message.find("no labels"), std::string::npos) << message;
  // Each logger's labels are checked as to_prometheus(stats, labels) checks them.
  message = page_refusal({{s, {{"logger", "a"}}}, {s, {{"le", "b"}}}});
  EXPECT_NE(message.find("label 'le'"), std::string::npos) << message;
  EXPECT_EQ(page_refusal({{s, {{"logger", "a"}}}, {s, {{"logger", "b"}}}}), "");
  EXPECT_EQ(page_refusal({}), "");
}

// Bucket bounds and sums are the decimals they stand for: 2^k - 1 raw
// units (255 us is 0.000255 s), never a double's binary neighbour
// (0.00025499999999999996) or an exponent.
TEST(Prometheus, BucketBoundsArePrintedAsWritten) {
  auditpipe::Stats s;
  s.write_latency_us.count = 1;
  s.write_latency_us.sum = 300;  // us
  s.write_latency_us.buckets[10] = 1;
  s.producer_wait_ns.count = 1;
  s.producer_wait_ns.sum = 1'500'000'007;  // ns
  const std::string text = auditpipe::to_prometheus(s);
  EXPECT_NE(text.find("auditpipe_write_duration_seconds_bucket{le=\"0.000255\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("auditpipe_write_duration_seconds_bucket{le=\"134.217727\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("auditpipe_producer_wait_seconds_bucket{le=\"0.000001023\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("auditpipe_batch_size_records_bucket{le=\"1048575\"}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("auditpipe_write_duration_seconds_sum 0.0003\n"), std::string::npos) << text;
  EXPECT_NE(text.find("auditpipe_producer_wait_seconds_sum 1.500000007\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("9999999"), std::string::npos) << text;
  EXPECT_EQ(text.find("e-"), std::string::npos) << text;
  EXPECT_EQ(text.find("e+"), std::string::npos) << text;
  EXPECT_TRUE(PromText(text).errors().empty()) << joined(PromText(text).errors()) << text;
}

TEST(Prometheus, BuildInfoCarriesTheProjectVersion) {
  const PromText parsed(auditpipe::to_prometheus(auditpipe::Stats{}, {{"logger", "payments"}}));
  ASSERT_TRUE(parsed.errors().empty()) << joined(parsed.errors());
  EXPECT_EQ(parsed.families().at("auditpipe_build_info").type, "gauge");
  EXPECT_EQ(parsed.value("auditpipe_build_info",
                         {{"logger", "payments"}, {"version", AUDITPIPE_TEST_PROJECT_VERSION}}),
            1);
}

// The rules file compares producer waits with max_wait: both on the page.
TEST(Prometheus, MaxWaitIsAGaugeInSeconds) {
  auto sink = std::make_shared<testing_support::CollectingSink>();
  auditpipe::Options o;
  o.max_wait = std::chrono::milliseconds(250);
  auditpipe::Logger<testing_support::AuditRow> logger(sink, o);
  const std::string text = auditpipe::to_prometheus(logger.stats());
  EXPECT_NE(text.find("# TYPE auditpipe_producer_max_wait_seconds gauge\n"
                      "auditpipe_producer_max_wait_seconds 0.25\n"),
            std::string::npos)
      << text;
}

TEST(Prometheus, SummaryLine) {
  auditpipe::Stats s;
  s.committed = 12;
  s.written = 10;
  s.health = auditpipe::Health::degraded;
  const std::string line = auditpipe::summary_line(s);
  EXPECT_NE(line.find("health degraded"), std::string::npos) << line;
  EXPECT_NE(line.find("committed 12"), std::string::npos) << line;
  EXPECT_NE(line.find("written 10"), std::string::npos) << line;
}

}  // namespace
