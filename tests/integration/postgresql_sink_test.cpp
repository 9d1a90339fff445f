// The PostgreSQL sink on the throwaway PostgreSQL server
// (scripts/postgres.sh): column types, clear errors at start, table checks,
// refused records isolated, failover across a host list. (Hostile text,
// exactly-once delivery and retried batches: sink_conformance_test.cpp.)
#include "auditpipe/postgresql/postgresql_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "eventually.h"
#include "postgresql_probe.h"

// One column of every integer kind at its limits, a double and a timestamp.
struct Extremes {
  std::int32_t row = 0;
  std::int8_t i8 = 0;
  std::int16_t i16 = 0;
  std::int32_t i32 = 0;
  std::int64_t i64 = 0;
  std::uint8_t u8 = 0;
  std::uint16_t u16 = 0;
  std::uint32_t u32 = 0;
  bool b = false;
  double f = 0;
  auditpipe::timestamp at;
};

constexpr auto describe(auditpipe::type_tag<Extremes>) {
  return auditpipe::table<Extremes>(
      "audit_extremes", AUDITPIPE_COLUMN(Extremes, row), AUDITPIPE_COLUMN(Extremes, i8),
      AUDITPIPE_COLUMN(Extremes, i16), AUDITPIPE_COLUMN(Extremes, i32),
      AUDITPIPE_COLUMN(Extremes, i64), AUDITPIPE_COLUMN(Extremes, u8),
      AUDITPIPE_COLUMN(Extremes, u16), AUDITPIPE_COLUMN(Extremes, u32),
      AUDITPIPE_COLUMN(Extremes, b), AUDITPIPE_COLUMN(Extremes, f), AUDITPIPE_COLUMN(Extremes, at));
}

namespace {

using auditpipe::Status;
using testing_support::AuditRow;
using testing_support::eventually;
using testing_support::postgresql_test_url;
using testing_support::PostgresqlProbe;

void drop_table() {
  PostgresqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log");
  probe.exec("DROP TABLE IF EXISTS audit_log_seals");
  probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
}

std::string url_with(const std::string& options) {
  const std::string base = postgresql_test_url();
  return options.empty() ? base
                         : base + (base.find('?') == std::string::npos ? "?" : "&") + options;
}

// The test server's URL as another user.
std::string url_as(const std::string& user, const std::string& password) {
  const auto u = auditpipe::parse_url(postgresql_test_url());
  return "postgresql://" + user + ":" + password + "@" + u.hosts[0].host + ":" +
         std::to_string(*u.hosts[0].port) + "/" + u.path;
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

// Every value a record can hold is stored exactly or refused and counted:
// integers at both ends of every width, doubles at their edges (NaN, the
// infinities, -0, subnormals), timestamps across PostgreSQL's whole range
// (4714-11-24 BC to beyond the largest int64 microsecond, year 294247) and
// just outside it.
TEST_P(PostgresqlWritePath, EveryValueIsStoredExactlyOrRefusedAndCounted) {
  PostgresqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_extremes");
  using L8 = std::numeric_limits<std::int8_t>;
  using L16 = std::numeric_limits<std::int16_t>;
  using L32 = std::numeric_limits<std::int32_t>;
  using L64 = std::numeric_limits<std::int64_t>;
  using LD = std::numeric_limits<double>;
  const std::vector<double> doubles = {
      LD::quiet_NaN(),   LD::infinity(), -LD::infinity(), -0.0,      LD::denorm_min(),
      -LD::denorm_min(), LD::max(),      LD::lowest(),    LD::min(), 0.1};
  constexpr std::int64_t earliest = -210'866'803'200'000'000;  // 4714-11-24 00:00:00 BC
  const std::vector<std::int64_t> stored_times = {
      L64::max(),               // 294247-01-10 04:00:54.775807
      320'000'000'000'000'000,  // a five-digit year
      1'700'000'000'123'456,    // 2023
      0,
      -1,
      -62'135'596'800'000'001,   // the last microsecond of 1 BC
      -100'000'000'000'000'000,  // 1199 BC
      earliest};
  // Before PostgreSQL's first day, and the lowest value a timestamp holds.
  const std::vector<std::int64_t> refused_times = {earliest - 1, L64::min()};
  const std::size_t rows = std::max(doubles.size(), stored_times.size());
  auto expected_int = [](std::size_t row, auto lowest, auto highest) -> long long {
    return row % 3 == 0 ? lowest : row % 3 == 1 ? highest : 0;
  };
  {
    auditpipe::Options o;
    o.flush_interval = std::chrono::seconds(60);
    auditpipe::Logger<Extremes> logger(
        auditpipe::postgresql::open(url_with("write_path=" + GetParam())), o);
    for (std::size_t i = 0; i < rows + refused_times.size(); ++i) {
      auto r = logger.acquire();
      r->row = static_cast<std::int32_t>(i);
      r->i8 = static_cast<std::int8_t>(expected_int(i, L8::min(), L8::max()));
      r->i16 = static_cast<std::int16_t>(expected_int(i, L16::min(), L16::max()));
      r->i32 = static_cast<std::int32_t>(expected_int(i, L32::min(), L32::max()));
      r->i64 = expected_int(i, L64::min(), L64::max());
      r->u8 = static_cast<std::uint8_t>(expected_int(i, 0, 255));
      r->u16 = static_cast<std::uint16_t>(expected_int(i, 0, 65535));
      r->u32 = static_cast<std::uint32_t>(expected_int(i, 0, 4294967295LL));
      r->b = i % 2 == 1;
      r->f = doubles[i % doubles.size()];
      r->at = auditpipe::timestamp{i < rows ? stored_times[i % stored_times.size()]
                                            : refused_times[i - rows]};
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.written, rows);
    EXPECT_EQ(report.stats.rejected_by_sink, refused_times.size());
  }
  const auto stored = probe.rows(
      "SELECT row, i8, i16, i32, i64, u8, u16, u32, b, f::text, "
      // Microseconds since 1970 from the stored binary value (since 2000):
      // extract(epoch ...) rounds near the ends of the range.
      "((('x' || encode(timestamptz_send(at), 'hex'))::bit(64)::bigint)::numeric "
      "+ 946684800000000)::text FROM audit_extremes ORDER BY row");
  ASSERT_EQ(stored.size(), rows);
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& r = stored[i];
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(*r[1], std::to_string(expected_int(i, L8::min(), L8::max())));
    EXPECT_EQ(*r[2], std::to_string(expected_int(i, L16::min(), L16::max())));
    EXPECT_EQ(*r[3], std::to_string(expected_int(i, L32::min(), L32::max())));
    EXPECT_EQ(*r[4], std::to_string(expected_int(i, L64::min(), L64::max())));
    EXPECT_EQ(*r[5], std::to_string(expected_int(i, 0, 255)));
    EXPECT_EQ(*r[6], std::to_string(expected_int(i, 0, 65535)));
    EXPECT_EQ(*r[7], std::to_string(expected_int(i, 0, 4294967295LL)));
    EXPECT_EQ(*r[8], i % 2 == 1 ? "t" : "f");
    const double want = doubles[i % doubles.size()];
    const double got = std::strtod(r[9]->c_str(), nullptr);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << *r[9];
    } else {
      EXPECT_EQ(std::memcmp(&want, &got, sizeof want), 0) << *r[9];  // -0 included
    }
    EXPECT_EQ(*r[10], std::to_string(stored_times[i % stored_times.size()]));
  }
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

// A refused login is one login: telling a server that refused from one
// that is down (a ping) logged in again with the same password, so every
// start with a wrong one left two failed logins in the server's log (a
// lockout or fail2ban policy counts them).
TEST(PostgresqlSink, AWrongPasswordIsOneFailedLoginPerStart) {
  const char* dir = std::getenv("AUDITPIPE_POSTGRES_DIR");
  const std::string log =
      std::string(dir && *dir ? dir : AUDITPIPE_SOURCE_DIR "/build/postgres") + "/server.log";
  const auto failed_logins = [&] {
    std::ifstream in(log);
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      n += line.find("password authentication failed for user \"auditpipe_no_such_login\"") !=
           std::string::npos;
    return n;
  };
  ASSERT_TRUE(std::ifstream(log).good()) << log;
  const std::string url = url_as("auditpipe_no_such_login", "Wr0ng");
  const int before = failed_logins();
  testing::internal::CaptureStderr();
  const std::string e = open_error(url);
  // Nothing of libpq's own on stderr (the ping warned "password file
  // "/dev/null" is not a plain file" on every start).
  const std::string stderr_text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(stderr_text.find("WARNING"), std::string::npos) << stderr_text;
  EXPECT_NE(e.find("password authentication failed"), std::string::npos) << e;
  EXPECT_TRUE(eventually([&] { return failed_logins() >= before + 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a second would be there by now
  EXPECT_EQ(failed_logins(), before + 1);
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

// A unique index on (source_id, seq) that ON CONFLICT (source_id, seq)
// cannot use as its arbiter is refused at start, named, with why: a
// partial one let every key of rows outside its WHERE be stored twice; a
// deferrable one failed every batch holding a key already stored (55000),
// retried for ever; one also over an expression is not unique on the pair.
TEST(PostgresqlSink, AUniqueKeyOnTheKeyPairThatOnConflictCannotUseIsRefusedAtStart) {
  const std::string columns =
      "at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, latency_ms DOUBLE "
      "PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, payload TEXT, source_id BIGINT "
      "NOT NULL, seq BIGINT NOT NULL";
  struct Case {
    std::string key, why;
  };
  for (const Case& k : {
           Case{"CREATE UNIQUE INDEX audit_once ON audit_log (source_id, seq) WHERE status > 0",
                "is partial (WHERE (status > 0))"},
           Case{"ALTER TABLE audit_log ADD CONSTRAINT audit_once PRIMARY KEY (source_id, seq) "
                "DEFERRABLE INITIALLY DEFERRED",
                "is deferrable"},
           Case{"ALTER TABLE audit_log ADD CONSTRAINT audit_once UNIQUE (source_id, seq) "
                "DEFERRABLE INITIALLY IMMEDIATE",
                "is deferrable"},
           Case{"CREATE UNIQUE INDEX audit_once ON audit_log (source_id, seq, (status + 1))",
                "is also over an expression"},
       }) {
    drop_table();
    PostgresqlProbe probe;
    probe.exec("CREATE TABLE audit_log (" + columns + ")");
    probe.exec(k.key);
    const std::string e = open_error(postgresql_test_url());
    EXPECT_NE(e.find("has unique key audit_once on (source_id, seq), but it " + k.why),
              std::string::npos)
        << k.key << ": " << e;
    EXPECT_NE(e.find("ON CONFLICT (source_id, seq) cannot use it"), std::string::npos) << e;
  }
  // An index's INCLUDE columns are not key columns: unique on source_id
  // alone is no key on the pair (every ON CONFLICT would fail, 42P10), and
  // a primary key on the pair that INCLUDEs another column is the key.
  {
    drop_table();
    PostgresqlProbe include;
    include.exec("CREATE TABLE audit_log (" + columns + ")");
    include.exec("CREATE UNIQUE INDEX audit_once ON audit_log (source_id) INCLUDE (seq)");
    const std::string e = open_error(postgresql_test_url());
    EXPECT_NE(e.find("has no unique key on (source_id, seq)"), std::string::npos) << e;
    drop_table();
    include.exec("CREATE TABLE audit_log (" + columns +
                 ", PRIMARY KEY (source_id, seq) INCLUDE (status))");
    EXPECT_EQ(open_error(postgresql_test_url()), "");
  }
  // Beside a plain one, such an index does no harm.
  drop_table();
  PostgresqlProbe probe;
  probe.exec("CREATE TABLE audit_log (" + columns + ", PRIMARY KEY (source_id, seq))");
  probe.exec("CREATE UNIQUE INDEX audit_partial ON audit_log (source_id, seq) WHERE status > 0");
  EXPECT_EQ(open_error(postgresql_test_url()), "");
  drop_table();
}

// A quoted name is exact in PostgreSQL, and the sink quotes every name: a
// column that differs from the record's only in case is another column
// (every insert naming "payload" would fail), and so is a key column. Said
// as such, and never "fixed" by adding "payload" beside "Payload"
// (migrate=add_columns did: a table whose two columns no schema, whose
// names compare ignoring case, could name apart).
TEST(PostgresqlSink, AColumnNamedInAnotherCaseIsNotTheRecords) {
  PostgresqlProbe probe;
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, "
      "latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, \"Payload\" "
      "TEXT, source_id BIGINT, seq BIGINT, PRIMARY KEY (source_id, seq))");
  std::string e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("only in case: the record's payload is Payload in the table"), std::string::npos)
      << e;
  e = open_error(url_with("migrate=add_columns"));
  EXPECT_NE(e.find("only in case: the record's payload is Payload in the table"), std::string::npos)
      << e;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM information_schema.columns WHERE table_name = "
                         "'audit_log' AND table_schema = current_schema()"),
            11);
  // Said so also where that column is NOT NULL (before: only that the table
  // has a NOT NULL column the record lacks, naming neither the record's).
  probe.exec("ALTER TABLE audit_log ALTER COLUMN \"Payload\" SET NOT NULL");
  e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("only in case: the record's payload is Payload in the table"), std::string::npos)
      << e;

  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, "
      "latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, payload TEXT, "
      "\"Source_Id\" BIGINT, seq BIGINT, PRIMARY KEY (\"Source_Id\", seq))");
  // A key column too (before: only that it lacked source_id).
  e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("only in case: the record's source_id is Source_Id in the table"),
            std::string::npos)
      << e;

  // A catalog name is shown as it reads, its control characters escaped.
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, "
      "latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, payload TEXT, "
      "\"\x1b[2J\xe7\x94\xa8\" TEXT NOT NULL, source_id BIGINT, seq BIGINT, "
      "PRIMARY KEY (source_id, seq))");
  e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("NOT NULL without a default: \\x1b[2J\xe7\x94\xa8;"), std::string::npos) << e;

  // Written as the sink writes it, the table is accepted and written.
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMPTZ, message_id BIGINT, status INTEGER, channel INTEGER, "
      "latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender TEXT, receiver TEXT, payload TEXT, "
      "source_id BIGINT, seq BIGINT, PRIMARY KEY (source_id, seq))");
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url()));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
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

// libpq's messages span lines ("Connection refused\n\tIs the server
// running..."): the sink's errors and stats().health_reason are one line
// each, for log line parsers and Prometheus labels.
TEST(PostgresqlSink, ConnectErrorsAreOneLine) {
  const auto u = auditpipe::parse_url(postgresql_test_url());
  const std::string url = "postgresql://" + u.user + ":" + *u.password +
                          "@127.0.0.1:1,127.0.0.1:2/" + u.path + "?connect_timeout=2";
  const std::string message = open_error(url);
  EXPECT_NE(message.find("Connection refused"), std::string::npos) << message;
  EXPECT_EQ(message.find_first_of("\n\t"), std::string::npos) << message;
  auditpipe::Options o;
  o.start_while_unreachable = true;
  auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url), o);
  const auditpipe::Stats s = logger.stats();
  EXPECT_EQ(s.health, auditpipe::Health::down);
  EXPECT_NE(s.health_reason.find("Connection refused"), std::string::npos) << s.health_reason;
  EXPECT_EQ(s.health_reason.find_first_of("\n\t"), std::string::npos) << s.health_reason;
  logger.close(std::chrono::milliseconds(100));
}

// libpq's socket spelling, ?host=<socket directory>&port=: the sink
// connects through the Unix socket scripts/postgres.sh puts in its
// directory (AUDITPIPE_POSTGRES_DIR); the server sees the connections
// without a client address, which only a Unix socket has.
TEST(PostgresqlSink, ConnectsThroughTheSocketDirectoryInHost) {
  drop_table();
  const auto u = auditpipe::parse_url(postgresql_test_url());
  const char* dir = std::getenv("AUDITPIPE_POSTGRES_DIR");
  const std::string socket_dir = dir && *dir ? dir : AUDITPIPE_SOURCE_DIR "/build/postgres";
  const std::string url = "postgresql://" + u.user + ":" + *u.password + "@/" + u.path +
                          "?host=" + socket_dir + "&port=" + std::to_string(*u.hosts[0].port) +
                          "&application_name=auditpipe_socket_test";
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
    for (int i = 0; i < 10; ++i) ASSERT_EQ(logger.acquire().commit(), Status::ok);
    ASSERT_TRUE(logger.flush(std::chrono::seconds(30)));
    PostgresqlProbe admin{PostgresqlProbe::Admin{}};
    EXPECT_GE(admin.scalar("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = "
                           "'auditpipe_socket_test' AND client_addr IS NULL"),
              1);
    EXPECT_EQ(admin.scalar("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = "
                           "'auditpipe_socket_test' AND client_addr IS NOT NULL"),
              0);
    EXPECT_TRUE(logger.close().drained);
  }
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 10);
}

// postgres://, the scheme libpq and most drivers also take, reaches the
// same server.
TEST(PostgresqlSink, ThePostgresSchemeConnects) {
  drop_table();
  std::string url = postgresql_test_url();
  ASSERT_EQ(url.rfind("postgresql://", 0), 0u) << url;
  url.replace(0, std::string("postgresql").size(), "postgres");
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
    for (int i = 0; i < 5; ++i) ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 5);
}

// GSS encryption is off unless asked for. libpq's default (prefer) has the
// Kerberos library look for credentials at every connect, and that
// library's global mutex, held by a pool's opener at a fork(), hung a
// pre-forking server's worker for ever at its own first connect (a trial:
// 3 runs of about 50). The Kerberos library makes KRB5_TRACE's file when it
// is asked anything: it stays away by default, and comes with
// ?gssencmode=prefer (so the test can tell).
TEST(PostgresqlSink, GssEncryptionIsOffUnlessAskedFor) {
  drop_table();
  char dir_template[] = "/tmp/auditpipe-krb5-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string trace = std::string(dir_template) + "/trace";
  ASSERT_EQ(setenv("KRB5_TRACE", trace.c_str(), 1), 0);
  unsetenv("PGGSSENCMODE");
  unsetenv("PGSERVICE");
  auto write_some = [](const std::string& url) {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
    for (int i = 0; i < 5; ++i) ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  };
  write_some(postgresql_test_url());
  EXPECT_FALSE(std::ifstream(trace).good()) << "the Kerberos library was asked at connect";
  const std::string url = postgresql_test_url();
  write_some(url + (url.find('?') == std::string::npos ? "?" : "&") + "gssencmode=prefer");
  const bool asked_with_prefer = std::ifstream(trace).good();
  unsetenv("KRB5_TRACE");
  std::remove(trace.c_str());
  rmdir(dir_template);
  // A libpq without GSSAPI, or a socket URL (libpq asks only over TCP),
  // never asks: nothing told apart here then.
  if (!asked_with_prefer) GTEST_SKIP() << "libpq did not ask the Kerberos library even with prefer";
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 10);
}

// A user who may read the table but not insert into it is refused at
// start, not retried forever at the first batch.
TEST(PostgresqlSink, AUserWhoMayNotInsertIsRefusedAtStart) {
  drop_table();
  { auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url())); }
  PostgresqlProbe admin(PostgresqlProbe::Admin{});
  admin.exec("DROP ROLE IF EXISTS auditpipe_reader");
  admin.exec("CREATE ROLE auditpipe_reader LOGIN PASSWORD 'reader-pw'");
  admin.exec("GRANT SELECT ON audit_log TO auditpipe_reader");
  const std::string url = url_as("auditpipe_reader", "reader-pw");
  const std::string e = open_error(url);
  EXPECT_NE(e.find("audit_log"), std::string::npos) << e;
  EXPECT_NE(e.find("INSERT"), std::string::npos) << e;
  EXPECT_NE(e.find("auditpipe_reader"), std::string::npos) << e;
  admin.exec("DROP TABLE audit_log");
  admin.exec("DROP ROLE auditpipe_reader");
  // A table of another role's, granted nothing: the catalog hid it, CREATE
  // TABLE IF NOT EXISTS left it alone, and the start passed (every batch
  // then failed with 42501).
  admin.exec("CREATE TABLE audit_log (source_id BIGINT NOT NULL, seq BIGINT NOT NULL)");
  const std::string hidden = open_error(postgresql_test_url());
  EXPECT_NE(hidden.find("may not see its columns"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("audit_log"), std::string::npos) << hidden;
  admin.exec("DROP TABLE audit_log");
}

// A least-privilege writer role, INSERT only. ON CONFLICT (source_id, seq)
// needs SELECT on the key columns: COPY worked, and a batch that met a
// stored key (every retry after a lost answer; every batch of
// write_path=insert) failed for good. Refused at start, the grant named;
// given it, it writes. Under seal= the writer reads rows back and stores
// seals: without SELECT on the table, or INSERT on the seals table (it
// started, and every seal failed), refused at start too.
TEST(PostgresqlSink, AnInsertOnlyRoleIsRefusedAtStartWithTheGrantsItLacks) {
  drop_table();
  { auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url())); }
  PostgresqlProbe admin(PostgresqlProbe::Admin{});
  admin.exec(
      "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'auditpipe_inserter') THEN "
      "DROP OWNED BY auditpipe_inserter CASCADE; DROP ROLE auditpipe_inserter; END IF; END $$");
  admin.exec("CREATE ROLE auditpipe_inserter LOGIN PASSWORD 'Ins3rt-Only'");
  admin.exec("GRANT INSERT ON audit_log TO auditpipe_inserter");
  admin.exec("GRANT USAGE ON SCHEMA public TO auditpipe_inserter");
  const std::string url = url_as("auditpipe_inserter", "Ins3rt-Only");
  const std::string e = open_error(url + "?write_path=insert");
  EXPECT_NE(e.find("GRANT SELECT (source_id, seq) ON audit_log TO auditpipe_inserter"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("Ins3rt-Only"), std::string::npos) << e;
  auto write = [](const std::string& to, int n) {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(to));
    for (int i = 0; i < n; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(n));
    EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  };
  admin.exec("GRANT SELECT (source_id, seq) ON audit_log TO auditpipe_inserter");
  write(url + "?write_path=insert", 20);
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 20);

  probe.exec("DELETE FROM audit_log");
  // The seals tables, made by the test user; the writer role may not create
  // tables.
  { auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url_with("seal=hash"))); }
  probe.exec("DELETE FROM audit_log_seals");
  const std::string sealed = open_error(url + "?seal=hash");
  EXPECT_NE(sealed.find("cannot be read by this user"), std::string::npos) << sealed;
  EXPECT_NE(sealed.find("grant it SELECT on the table"), std::string::npos) << sealed;
  admin.exec("GRANT SELECT ON audit_log TO auditpipe_inserter");
  // No grant on the seals table: the catalog hides it, and the start tries
  // to create it (a bare "permission denied for schema public" before).
  const std::string hidden = open_error(url + "?seal=hash");
  EXPECT_NE(hidden.find("cannot create the seals table \"audit_log_seals\""), std::string::npos)
      << hidden;
  EXPECT_NE(hidden.find("if it exists already, this user may not read it"), std::string::npos)
      << hidden;
  // Able to read the seals but not to store them: it started, and every
  // seal failed.
  admin.exec("GRANT SELECT ON audit_log_seals TO auditpipe_inserter");
  admin.exec("GRANT SELECT, INSERT, DELETE ON audit_log_unsealed TO auditpipe_inserter");
  const std::string refused = open_error(url + "?seal=hash");
  EXPECT_NE(refused.find("may not store seals in the seals table \"audit_log_seals\""),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("grant it SELECT and INSERT on it"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("Ins3rt-Only"), std::string::npos) << refused;
  admin.exec("GRANT INSERT ON audit_log_seals TO auditpipe_inserter");
  write(url + "?seal=hash", 20);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 20);
  EXPECT_EQ(probe.scalar("SELECT COALESCE(SUM(row_count), 0) FROM audit_log_seals"), 20);
  admin.exec("DROP OWNED BY auditpipe_inserter CASCADE");
  admin.exec("DROP ROLE auditpipe_inserter");
}

// A server that is not in recovery but takes no writes for this user
// (default_transaction_read_only): a configuration error at start, said as
// such, even for a logger that may start while the database is
// unreachable. (It was taken for a standby, unreachable, and such a
// logger started and waited for a promotion that never comes.)
TEST(PostgresqlSink, AServerThatTakesNoWritesThoughNotAStandbyIsRefusedAtStart) {
  PostgresqlProbe admin(PostgresqlProbe::Admin{});
  admin.exec("DROP ROLE IF EXISTS auditpipe_read_only");
  admin.exec("CREATE ROLE auditpipe_read_only LOGIN PASSWORD 'ro-pw'");
  admin.exec("ALTER ROLE auditpipe_read_only SET default_transaction_read_only = on");
  const std::string url = url_as("auditpipe_read_only", "ro-pw");
  auditpipe::Options o;
  o.start_while_unreachable = true;
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url), o);
    ADD_FAILURE() << "started on a server that takes no writes";
  } catch (const auditpipe::unreachable& e) {
    ADD_FAILURE() << "taken for unreachable: " << e.what();
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("takes no writes (transaction_read_only is on"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("ro-pw"), std::string::npos) << e.what();
  }
  admin.exec("DROP ROLE auditpipe_read_only");
}

// INSERT revoked while the logger runs: a configuration error (health down
// at the first failure, with the server's reason), retried slowly; granted
// back, every record lands once.
TEST(PostgresqlSink, ALostPrivilegeIsHealthDownUntilGrantedBack) {
  drop_table();
  PostgresqlProbe admin(PostgresqlProbe::Admin{});
  auditpipe::Options o;
  o.flush_interval = std::chrono::milliseconds(20);
  o.retry_backoff_initial = std::chrono::milliseconds(400);
  o.retry_backoff_max = std::chrono::milliseconds(400);
  auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url()), o);
  auto write = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
  };
  write(0, 10);
  ASSERT_TRUE(eventually([&] { return logger.stats().written == 10; }));
  admin.exec("REVOKE INSERT ON audit_log FROM auditpipe");
  write(10, 20);
  ASSERT_TRUE(eventually([&] { return logger.stats().health != auditpipe::Health::ok; }));
  const auto failing = logger.stats();
  EXPECT_EQ(failing.health, auditpipe::Health::down);
  EXPECT_NE(failing.health_reason.find("permission denied"), std::string::npos)
      << failing.health_reason;
  admin.exec("GRANT INSERT ON audit_log TO auditpipe");
  EXPECT_TRUE(eventually([&] { return logger.stats().written == 20; }));
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.health, auditpipe::Health::ok);
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 20);
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), 20);
}

// A table under row-level security (FORCE: its owner too): the server
// refuses COPY FROM into it (0A000), which applies no policies. The
// default write path writes INSERTs instead, which obey them; an explicit
// write_path=copy is a configuration failure naming the cause (not an
// endless retry of a statement that cannot succeed), whose records are
// kept until the table takes them.
void put_under_row_level_security() {
  drop_table();
  { auditpipe::Logger<AuditRow> create(auditpipe::postgresql::open(postgresql_test_url())); }
  PostgresqlProbe probe;
  probe.exec("ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY");
  probe.exec("ALTER TABLE audit_log FORCE ROW LEVEL SECURITY");
  probe.exec("CREATE POLICY every_row ON audit_log USING (true) WITH CHECK (true)");
}

TEST(PostgresqlSink, ATableUnderRowLevelSecurityIsWrittenWithInserts) {
  put_under_row_level_security();
  auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url()));
  for (int i = 0; i < 100; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  const auto report = logger.close(std::chrono::seconds(30));
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.written, 100u);
  EXPECT_EQ(report.stats.health, auditpipe::Health::ok);
  PostgresqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), 100);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 100);
}

TEST(PostgresqlSink, CopyIntoATableUnderRowLevelSecurityIsHealthDownUntilItIsLifted) {
  put_under_row_level_security();
  auditpipe::Options o;
  o.flush_interval = std::chrono::milliseconds(20);
  // A transient failure would be retried after 10, 20, 40, ... ms; a
  // configuration failure is retried at the slowest backoff.
  o.retry_backoff_initial = std::chrono::milliseconds(10);
  o.retry_backoff_max = std::chrono::milliseconds(3000);
  auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url_with("write_path=copy")), o);
  for (int i = 0; i < 10; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  ASSERT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }))
      << logger.stats().health_reason;
  const auto failing = logger.stats();
  EXPECT_NE(failing.health_reason.find("row-level security"), std::string::npos)
      << failing.health_reason;
  EXPECT_EQ(failing.written, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_LE(logger.stats().retries, 3u) << "retried as a transient failure";
  PostgresqlProbe probe;
  probe.exec("ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY");
  probe.exec("ALTER TABLE audit_log DISABLE ROW LEVEL SECURITY");
  EXPECT_TRUE(eventually([&] { return logger.stats().written == 10; }));
  EXPECT_TRUE(logger.close().drained);
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), 10);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 10);
}

// Loggers opened at once on a table nobody created yet all start and write.
TEST(PostgresqlSink, LoggersOpenedAtOnceOnANewTableAllStart) {
  for (int round = 0; round < 3; ++round) {
    drop_table();
    constexpr int loggers = 8;
    std::vector<std::string> errors(loggers);
    std::vector<std::thread> threads;
    for (int t = 0; t < loggers; ++t) {
      threads.emplace_back([&, t] {
        try {
          auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(postgresql_test_url()));
          auto r = logger.acquire();
          r->message_id = t;
          if (r.commit() != Status::ok) errors[t] = "commit failed";
          if (!logger.close().drained) errors[t] = "not drained";
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < loggers; ++t) EXPECT_EQ(errors[t], "") << "round " << round;
    PostgresqlProbe probe;
    EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), loggers);
  }
}

// A password and a database name with consecutive spaces, quotes and
// backslashes reach the server as they are.
TEST(PostgresqlSink, PasswordAndDatabaseNameArriveAsTheyAre) {
  const std::string password = "p  w'd\\\"  x", database = "d  b'c\\\"  e";
  PostgresqlProbe admin(PostgresqlProbe::Admin{});
  auto literal = [](const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  };
  auto ident = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  admin.exec("DROP DATABASE IF EXISTS " + ident(database));
  admin.exec("DROP ROLE IF EXISTS auditpipe_spaces");
  admin.exec("CREATE ROLE auditpipe_spaces LOGIN PASSWORD " + literal(password));
  admin.exec("CREATE DATABASE " + ident(database) + " OWNER auditpipe_spaces");
  const auto u = auditpipe::parse_url(postgresql_test_url());
  const std::string url =
      "postgresql://auditpipe_spaces:" + testing_support::percent_encoded(password) + "@" +
      u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port) + "/" +
      testing_support::percent_encoded(database);
  std::string e;
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  } catch (const std::exception& ex) {
    e = ex.what();
  }
  EXPECT_EQ(e, "");
  admin.exec("DROP DATABASE IF EXISTS " + ident(database) + " WITH (FORCE)");
  admin.exec("DROP ROLE auditpipe_spaces");
}

// COPY goes in the binary format, which must match each server column's
// type exactly: a table created beforehand with wider integers, a
// timestamp without time zone and VARCHAR gets every value as written.
TEST(PostgresqlSink, BinaryCopyWritesIntoWiderAndEquivalentColumnTypes) {
  PostgresqlProbe probe;
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at TIMESTAMP WITHOUT TIME ZONE, message_id BIGINT, status BIGINT, "
      "channel BIGINT, latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender VARCHAR(64), "
      "receiver TEXT, payload VARCHAR(200), source_id BIGINT, seq BIGINT, PRIMARY KEY (source_id, "
      "seq))");
  constexpr int n = 50;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::postgresql::open(url_with("write_path=copy")));
    for (int i = 0; i < n; ++i) {
      auto r = logger.acquire();
      r->at = auditpipe::timestamp{1'700'000'000'000'000 + i};
      r->message_id = -1'000'000'000'000LL * i;
      r->status = i % 2 ? -2'000'000'000 : 2'000'000'000;
      r->channel = static_cast<std::uint16_t>(65535 - i);
      r->latency_ms = 0.25 * i;
      r->delivered = i % 3 == 0;
      r->sender = "s\\t\tab " + std::to_string(i);  // backslashes and a tab, unescaped
      r->receiver = "r\xc3\xa9" + std::to_string(i);
      r->payload = std::string(static_cast<std::size_t>(i), 'p');
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(n));
    EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  }
  const auto rows = probe.rows(
      "SELECT (extract(epoch FROM at) * 1000000)::bigint, message_id, status, channel, "
      "latency_ms, delivered, sender, receiver, payload FROM audit_log ORDER BY seq");
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(*r[0], std::to_string(1'700'000'000'000'000 + i));
    EXPECT_EQ(*r[1], std::to_string(-1'000'000'000'000LL * i));
    EXPECT_EQ(*r[2], i % 2 ? "-2000000000" : "2000000000");
    EXPECT_EQ(*r[3], std::to_string(65535 - i));
    EXPECT_EQ(std::stod(*r[4]), 0.25 * i);
    EXPECT_EQ(*r[5], i % 3 == 0 ? "t" : "f");
    EXPECT_EQ(*r[6], "s\\t\tab " + std::to_string(i));
    EXPECT_EQ(*r[7], "r\xc3\xa9" + std::to_string(i));
    EXPECT_EQ(*r[8], std::string(static_cast<std::size_t>(i), 'p'));
  }
}

constexpr int before = 200, after = 200;

// Records 0 to `before` (message_id and status = i), then `alter` (an ALTER
// TABLE), then `after` more, through one writer on one connection opened
// before the ALTER, then `meanwhile` (if given) before they must all be
// written; what close() reports.
auditpipe::CloseReport log_around_an_alter(
    const std::function<void()>& alter,
    const std::function<void(auditpipe::Logger<AuditRow>&)>& meanwhile = {}) {
  drop_table();
  auditpipe::Options o;
  o.writers = 1;
  o.retry_backoff_max = std::chrono::milliseconds(500);
  auditpipe::Logger<AuditRow> logger(
      auditpipe::postgresql::open(url_with("write_path=copy&pool_size=1&min_idle=1")), o);
  auto log_range = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      r->status = i;
      r->payload = "altered";
      EXPECT_EQ(r.commit(), Status::ok);
    }
  };
  log_range(0, before);
  EXPECT_TRUE(logger.flush(std::chrono::seconds(30)));
  alter();
  log_range(before, before + after);
  if (meanwhile) meanwhile(logger);
  EXPECT_TRUE(logger.flush(std::chrono::seconds(30)));
  return logger.close();
}

// A column's type changed by ALTER TABLE while the logger runs: the binary
// COPY that no longer matches fails on the server, the connection reads
// the column types again and the batch goes once more; nothing is lost or
// refused.
TEST(PostgresqlSink, AColumnTypeChangedWhileRunningIsReadAgainAndTheBatchSentOnce) {
  const char* dir = std::getenv("AUDITPIPE_POSTGRES_DIR");
  const std::string log_path =
      std::string(dir && *dir ? dir : AUDITPIPE_SOURCE_DIR "/build/postgres") + "/server.log";
  ASSERT_TRUE(std::ifstream(log_path).is_open()) << "no server log at " << log_path;
  auto binary_value_errors = [&] {
    std::ifstream log(log_path);
    std::string line;
    int n = 0;
    // What the server says of 4 bytes sent for a BIGINT.
    while (std::getline(log, line)) {
      n += line.find("insufficient data left in message") != std::string::npos;
    }
    return n;
  };
  PostgresqlProbe probe;
  int errors_before = 0;
  const auto report = log_around_an_alter([&] {
    errors_before = binary_value_errors();
    probe.exec("ALTER TABLE audit_log ALTER COLUMN status TYPE BIGINT");
  });
  EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(before + after));
  EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  EXPECT_EQ(report.stats.retries, 0u) << "the batch was retried, not sent again at once";
  EXPECT_GT(binary_value_errors(), errors_before)
      << "no binary COPY met the changed column: the test proved nothing";
  const auto rows = probe.rows("SELECT count(*), sum(status) FROM audit_log");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(*rows[0][0], std::to_string(before + after));
  EXPECT_EQ(*rows[0][1], std::to_string((before + after - 1) * (before + after) / 2));
}

// The same where the old binary values are valid ones of the new types
// (bigint's 8 bytes a numeric, int's 4 a real): the server took them
// without a word, and 217 was stored as 0.0000... or 3.0e-43. The COPY now
// commits only while the types are those it encoded for. And types the
// open refuses (real rounds integers past 2^24 and doubles to single
// precision; numeric does not give a double back) are refused as at the
// open: a configuration failure naming the column, the records kept until
// the column is put back, then written once, with their values.
TEST(PostgresqlSink, AColumnTypeChangedToOneTheOpenRefusesIsRefusedUntilPutBack) {
  PostgresqlProbe probe;
  const auto report = log_around_an_alter(
      [&] {
        probe.exec(
            "ALTER TABLE audit_log ALTER COLUMN status TYPE REAL, ALTER COLUMN message_id TYPE "
            "NUMERIC");
      },
      [&](auditpipe::Logger<AuditRow>& logger) {
        EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }))
            << logger.stats().health_reason;
        const auto down = logger.stats();
        EXPECT_NE(down.health_reason.find("changed while the logger ran"), std::string::npos)
            << down.health_reason;
        EXPECT_NE(down.health_reason.find("numeric"), std::string::npos) << down.health_reason;
        EXPECT_EQ(down.written, static_cast<std::uint64_t>(before));
        EXPECT_EQ(probe.scalar("SELECT count(*) FROM audit_log"), before);
        probe.exec(
            "ALTER TABLE audit_log ALTER COLUMN status TYPE INTEGER, ALTER COLUMN message_id TYPE "
            "BIGINT");
      });
  EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(before + after));
  EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  EXPECT_EQ(probe.scalar("SELECT count(*) FROM audit_log"), before + after);
  EXPECT_EQ(probe.scalar("SELECT count(*) FROM audit_log WHERE message_id = status AND "
                         "message_id >= 0 AND message_id < " +
                         std::to_string(before + after)),
            before + after)
      << "values stored as other numbers";
  EXPECT_EQ(probe.scalar("SELECT count(DISTINCT message_id) FROM audit_log"), before + after);
}

// An existing column of a type that cannot hold the record's values is
// refused at start, naming table, column, found and accepted types; wider
// and equivalent types pass.
TEST(PostgresqlSink, AnExistingColumnOfTheWrongTypeIsRefusedAtStart) {
  PostgresqlProbe probe;
  auto table = [&](const std::string& status_type, const std::string& at_type) {
    drop_table();
    probe.exec("CREATE TABLE audit_log (at " + at_type + ", message_id BIGINT, status " +
               status_type +
               ", channel BIGINT, latency_ms DOUBLE PRECISION, delivered BOOLEAN, sender "
               "VARCHAR(64), receiver TEXT, payload TEXT, source_id BIGINT, seq BIGINT, PRIMARY "
               "KEY (source_id, seq))");
  };
  table("TEXT", "TIMESTAMPTZ");
  std::string e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("audit_log"), std::string::npos) << e;
  EXPECT_NE(e.find("status is text but the record's int32 needs integer, bigint"),
            std::string::npos)
      << e;
  table("SMALLINT", "TIMESTAMP(3)");
  e = open_error(postgresql_test_url());
  EXPECT_NE(e.find("status is smallint"), std::string::npos) << e;
  EXPECT_NE(e.find("at is timestamp without time zone(3)"), std::string::npos) << e;
  table("BIGINT", "TIMESTAMP WITHOUT TIME ZONE");
  EXPECT_EQ(open_error(postgresql_test_url()), "");
}

}  // namespace
