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
  stats.connection_pool = pool;
  const std::string text = auditpipe::to_prometheus(stats, {{"logger", "pay\"ments\\\n"}});
  const PromText parsed(text);
  EXPECT_TRUE(parsed.errors().empty()) << joined(parsed.errors()) << text;

  const std::map<std::string, std::string> label{{"logger", "pay\"ments\\\n"}};
  EXPECT_EQ(parsed.value("auditpipe_records_committed_total", label), 250);
  EXPECT_EQ(parsed.value("auditpipe_records_written_total", label), 250);
  EXPECT_EQ(parsed.value("auditpipe_connection_pool_idle_connections", label), 3);
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
      "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 3\nh_bucket{le=\"+Inf\"} "
      "5\nh_sum 1\nh_count 5\n",                                            // not cumulative
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
