// The PostgreSQL sink on the throwaway PostgreSQL server
// (scripts/postgres.sh): column types, clear errors at start, table checks,
// refused records isolated, failover across a host list. (Hostile text,
// exactly-once delivery and retried batches: sink_conformance_test.cpp.)
#include "auditpipe/postgresql/postgresql_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "postgresql_probe.h"

namespace {

using auditpipe::Status;
using testing_support::AuditRow;
using testing_support::postgresql_test_url;
using testing_support::PostgresqlProbe;

void drop_table() {
  PostgresqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log");
}

std::string url_with(const std::string& options) {
  const std::string base = postgresql_test_url();
  return options.empty() ? base
                         : base + (base.find('?') == std::string::npos ? "?" : "&") + options;
}

std::string open_error(const std::string& url) {
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

class PostgresqlWritePath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { drop_table(); }
};

TEST_P(PostgresqlWritePath, EveryColumnTypeRoundTrips) {
  {
    auditpipe::Logger<AuditRow> logger(
        auditpipe::postgresql::open(url_with("write_path=" + GetParam())));
    for (int i = 0; i < 4; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      r->at = auditpipe::timestamp{1'700'000'000'123'456 + i};
      r->status = -i;
      r->channel = 65535;
      r->delivered = i % 2 == 0;
      r->latency_ms = i == 3 ? std::numeric_limits<double>::quiet_NaN() : 0.1 * i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_TRUE(logger.close().drained);
  }
  PostgresqlProbe probe;
  for (int i = 0; i < 4; ++i) {
    const auto r = probe.rows(
        "SELECT status, channel, delivered, latency_ms, to_char(at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD HH24:MI:SS.US') FROM audit_log WHERE message_id = " +
        std::to_string(i));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(*r[0][0], std::to_string(-i));
    EXPECT_EQ(*r[0][1], "65535");
    EXPECT_EQ(*r[0][2], i % 2 == 0 ? "t" : "f");
    if (i == 3) {
      EXPECT_EQ(*r[0][3], "NaN");  // PostgreSQL stores NaN as such
    } else {
      EXPECT_DOUBLE_EQ(std::stod(*r[0][3]), 0.1 * i);
    }
    EXPECT_EQ(*r[0][4], "2023-11-14 22:13:20." + std::to_string(123456 + i));
  }
}

TEST_P(PostgresqlWritePath, ARecordTheServerRefusesIsIsolatedAndTheRestWritten) {
  PostgresqlProbe probe;
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER CHECK (status >= "
      "0), "
      "channel INTEGER, latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver "
      "TEXT, "
      "payload TEXT, source_id BIGINT, seq BIGINT, PRIMARY KEY (source_id, seq))");
  auditpipe::Options o;
  o.flush_interval = std::chrono::seconds(60);
  {
    auditpipe::Logger<AuditRow> logger(
        auditpipe::postgresql::open(url_with("write_path=" + GetParam())), o);
    for (int i = 0; i < 100; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      r->status = i == 61 ? -5 : 1;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.rejected_by_sink, 1u);
    EXPECT_EQ(report.stats.written, 99u);
  }
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 99);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log WHERE message_id = 61"), 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, PostgresqlWritePath, ::testing::Values("copy", "insert"),
                         [](const auto& param_info) { return param_info.param; });

TEST(PostgresqlSink, AutoChoosesCopy) {
  drop_table();
  auto sink = auditpipe::postgresql::open(postgresql_test_url());
  auditpipe::Logger<AuditRow> logger(sink);
  EXPECT_EQ(sink->write_path(), auditpipe::postgresql::WritePath::copy);
}

TEST(PostgresqlSink, ClearErrorsAtStartAndNoPasswordInThem) {
  drop_table();
  const auto u = auditpipe::parse_url(postgresql_test_url());
  const std::string host = u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port);
  struct Case {
    std::string url, expect;
  };
  const std::vector<Case> cases = {
      {"postgresql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path,
       "password authentication failed"},
      {"postgresql://" + u.user + ":Sekr1t-Pw@127.0.0.1:1/" + u.path, "cannot connect"},
      {"postgresql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path + "?colour=blue",
       "unknown option 'colour'"},
      {"postgresql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path + "?sslmode=sometimes",
       "sslmode must be"},
      {"postgresql://" + u.user + ":Sekr1t-Pw@" + host, "no database name"},
      {"postgresql://" + u.user + ":" + *u.password + "@" + host + "/no_such_db", "no_such_db"},
  };
  for (const auto& c : cases) {
    const std::string message = open_error(c.url);
    EXPECT_NE(message.find(c.expect), std::string::npos) << c.url << " -> " << message;
    EXPECT_EQ(message.find("Sekr1t-Pw"), std::string::npos) << message;
  }
}

TEST(PostgresqlSink, AnExistingTableIsCheckedAtStart) {
  PostgresqlProbe probe;
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (message_id BIGINT, source_id BIGINT, seq BIGINT, PRIMARY KEY "
      "(source_id, seq))");
  std::string e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("lacks the columns"), std::string::npos) << e;
  EXPECT_NE(e.find("payload"), std::string::npos) << e;

  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, "
      "latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, payload TEXT, "
      "source_id BIGINT, seq BIGINT)");
  e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("no unique key on (source_id, seq)"), std::string::npos) << e;

  probe.exec("CREATE UNIQUE INDEX audit_once ON audit_log (seq, source_id)");
  EXPECT_EQ(open_error(postgresql_test_url()), "");
}

TEST(PostgresqlSink, TriesTheHostsInOrder) {
  drop_table();
  const auto u = auditpipe::parse_url(postgresql_test_url());
  const std::string url = "postgresql://" + u.user + ":" + *u.password + "@127.0.0.1:1," +
                          u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port) + "/" + u.path;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
}

}  // namespace
