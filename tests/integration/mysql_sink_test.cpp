// The MySQL sink on the real throwaway MariaDB server (scripts/mariadb.sh):
// column types on every write path, a million records from many producers
// exactly once, several writers, one statement per batch read from the
// server's own counters, clear errors at start, failover, TLS, sockets.
// (Hostile text, UTF-8 repair and retried batches: sink_conformance_test.cpp.)
#include "auditpipe/mysql/mysql_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/logger.h"
#include "auditpipe/schema.h"
#include "captured_warnings.h"
#include "mysql_probe.h"

namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using auditpipe::Status;
using auditpipe::mysql::WritePath;
using testing_support::AuditRow;
using testing_support::mysql_url_with;
using testing_support::MysqlProbe;

void drop_table() {
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log");
  probe.exec("DROP TABLE IF EXISTS audit_log_seals");
  probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
}

std::string open_error(const std::string& url) {
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
  } catch (const auditpipe::error& e) {
    return e.what();
  }
  return "";
}

long long rows_to_write() {
  const char* scale = std::getenv("AUDITPIPE_TEST_ROWS");
  return scale ? std::atoll(scale) : 1'000'000;
}

class MysqlWritePath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { drop_table(); }
  std::string url() const { return mysql_url_with("write_path=" + GetParam()); }
};

TEST_P(MysqlWritePath, EveryColumnTypeRoundTrips) {
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url()));
    for (int i = 0; i < 10; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      r->at = auditpipe::timestamp{1'700'000'000'123'456 + i};
      r->latency_ms = 0.1 * i;
      r->status = -i;
      r->channel = 65535;
      r->delivered = i % 2 == 0;
      r->sender = "typed";
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  for (int i = 0; i < 10; ++i) {
    const auto r = probe.rows(
        "SELECT status, channel, delivered, latency_ms, "
        "DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f') FROM audit_log WHERE message_id = " +
        std::to_string(i));
    ASSERT_EQ(r.size(), 1u) << i;
    EXPECT_EQ(*r[0][0], std::to_string(-i));
    EXPECT_EQ(*r[0][1], "65535");
    EXPECT_EQ(*r[0][2], i % 2 == 0 ? "1" : "0");
    EXPECT_DOUBLE_EQ(std::stod(*r[0][3]), 0.1 * i);
    EXPECT_EQ(*r[0][4], "2023-11-14 22:13:20." + std::to_string(123456 + i));
  }
}

// Reads the server's statement counters around N full batches: exactly one
// data statement per batch and nothing else (no SET, COMMIT, ROLLBACK or
// probe per batch).
TEST_P(MysqlWritePath, OneStatementPerBatchAndNothingElse) {
  constexpr int batches = 20;
  constexpr int batch_size = 500;
  auditpipe::Options o;
  o.capacity = batches * batch_size;
  o.batch_size = batch_size;
  o.writers = 1;
  o.flush_interval = 60s;        // batches leave only when full
  o.write_latency_target = 0ms;  // and full is batch_size, however long a write takes
  auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url() + "&pool_size=1"), o);
  MysqlProbe probe;
  // What reading the counters itself adds, measured the same way. Global
  // status also takes in a closed connection's counters only once the server
  // has finished tearing its thread down (SetUp's DROP arrived up to a read
  // late), so the reads start once the server lists no connection of this
  // user but the probe and the logger's one, and the cost is taken from
  // three reads whose two steps agree. (With pool_size=1 the logger holds
  // one connection, opened before its constructor returned.)
  std::map<std::string, long long> m0, m1, before;
  long long others = -1;
  bool steady = false;
  for (int attempt = 0; attempt < 100 && !steady; ++attempt) {
    others = probe.scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND "
        "USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)");
    if (others != 1) {  // the logger's
      std::this_thread::sleep_for(20ms);
      continue;
    }
    m0 = probe.global_status();
    m1 = probe.global_status();
    before = probe.global_status();
    steady = true;
    for (const auto& [name, value] : m1) {
      const bool counted = name == "Questions" || name.rfind("Com_", 0) == 0;
      steady = steady && (!counted || value - m0.at(name) == before.at(name) - value);
    }
    if (!steady) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(steady) << "the server's counters did not settle in 2 s; other connections of "
                         "this user: "
                      << others;
  for (int i = 0; i < batches * batch_size; ++i) {
    auto r = logger.acquire();
    r->message_id = i;
    r->payload = "counted";
    ASSERT_EQ(r.commit(), Status::ok);
  }
  ASSERT_TRUE(logger.flush(60s));
  const auto after = probe.global_status();
  auto delta = [&](const std::string& name) {
    return (after.at(name) - before.at(name)) - (m1.at(name) - m0.at(name));
  };
  const std::string data = GetParam() == "bulk"   ? "Com_stmt_execute"
                           : GetParam() == "text" ? "Com_insert"
                                                  : "Com_load";
  std::printf(
      "[ statements ] path %s, %d batches: %s %lld, Com_insert %lld, Com_stmt_execute %lld, "
      "Com_load %lld, Com_commit %lld, Com_rollback %lld, Com_set_option %lld, Questions %lld\n",
      GetParam().c_str(), batches, data.c_str(), delta(data), delta("Com_insert"),
      delta("Com_stmt_execute"), delta("Com_load"), delta("Com_commit"), delta("Com_rollback"),
      delta("Com_set_option"), delta("Questions"));
  // On a failure, which statements they were: each Com_ counter that moved.
  std::string moved;
  for (const auto& [name, value] : after) {
    if (name.rfind("Com_", 0) == 0 && delta(name) != 0) {
      moved += " " + name + " " + std::to_string(delta(name));
    }
  }
  EXPECT_EQ(delta(data), batches) << "counters that moved:" << moved;
  EXPECT_EQ(delta("Questions"), batches) << "counters that moved:" << moved;
  EXPECT_EQ(delta("Com_commit"), 0);
  EXPECT_EQ(delta("Com_rollback"), 0);
  EXPECT_EQ(delta("Com_set_option"), 0);
  EXPECT_EQ(delta("Com_stmt_prepare"), 0);
  EXPECT_EQ(delta("Com_select"), 0);
  const auto stats = logger.close().stats;
  EXPECT_EQ(stats.batches, static_cast<std::uint64_t>(batches));
}

// A batch bigger than max_allowed_packet (16 MiB here) is cut into
// statements that fit, instead of making the server drop the connection.
TEST_P(MysqlWritePath, ABatchLargerThanMaxAllowedPacketIsSplit) {
  constexpr int rows = 80000;  // ~200 bytes of text each: ~16 MiB and more
  auditpipe::Options o;
  o.writers = 1;  // one batch, by one writer
  o.capacity = rows;
  o.batch_size = rows;
  o.write_latency_target = 0ms;  // all of it, however long the write takes
  o.flush_interval = 60s;
  auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url()), o);
  for (int i = 0; i < rows; ++i) {
    auto r = logger.acquire();
    r->message_id = i;
    r->sender = std::string(32, 's');
    r->receiver = std::string(32, 'r');
    r->payload = std::string(128, 'p');
    ASSERT_EQ(r.commit(), Status::ok);
  }
  const auto report = logger.close(120s);
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.write_failures, 0u);
  EXPECT_EQ(report.stats.batches, 1u);
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), rows);
}

INSTANTIATE_TEST_SUITE_P(Paths, MysqlWritePath, ::testing::Values("bulk", "text", "load_data"),
                         [](const auto& param_info) { return param_info.param; });

TEST(MysqlSink, AutoChoosesBulkOnMariaDB) {
  drop_table();
  auto sink = auditpipe::mysql::open(mysql_url_with(""));
  auditpipe::Logger<AuditRow> logger(sink);
  EXPECT_EQ(sink->write_path(), WritePath::bulk);
}

// A unique key on a written column, added while the logger runs (the table
// check refuses one at start): the insert skips a conflict on any unique
// key, so the rows it absorbed vanished, counted as written. Now a batch
// that stored fewer rows than it sent has its keys looked for; the rows
// missing are refused, one by one, and counted so, on every write path.
TEST(MysqlSink, RowsAUniqueKeyAddedWhileRunningAbsorbsAreRefusedNotCountedWritten) {
  for (const char* path : {"bulk", "text", "load_data"}) {
    SCOPED_TRACE(path);
    drop_table();
    MysqlProbe probe;
    auditpipe::Options o;
    o.writers = 1;
    auditpipe::Logger<AuditRow> logger(
        auditpipe::mysql::open(mysql_url_with("write_path="s + path)), o);
    auto log_range = [&](int from, int to, int channels) {
      for (int i = from; i < to; ++i) {
        auto r = logger.acquire();
        r->message_id = i;
        r->channel = static_cast<std::uint16_t>(i % channels);
        ASSERT_EQ(r.commit(), Status::ok);
      }
    };
    log_range(0, 100, 100);
    ASSERT_TRUE(logger.flush(30s));
    probe.exec("ALTER TABLE audit_log ADD UNIQUE KEY one_per_channel (channel)");
    log_range(100, 200, 100);   // channels 0-99 again: every one conflicts
    log_range(200, 210, 1000);  // channels 200-209: new
    ASSERT_TRUE(logger.flush(60s));
    const auto report = logger.close();
    EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 110);
    EXPECT_EQ(report.stats.written, 110u);
    EXPECT_EQ(report.stats.rejected_by_sink, 100u);
  }
}

TEST(MysqlSink, AMillionRecordsFromSixteenProducersLandExactlyOnce) {
  drop_table();
  const long long total = rows_to_write();
  constexpr int producers = 16;
  {
    auditpipe::Options o;
    o.capacity = 65536;
    o.batch_size = 2000;
    o.writers = 2;
    o.max_wait = 30s;
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(mysql_url_with("")), o);
    std::vector<std::thread> threads;
    std::atomic<long long> not_ok{0};
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (long long i = p; i < total; i += producers) {
          auto r = logger.acquire();
          if (!r) {
            ++not_ok;
            continue;
          }
          r->message_id = i;
          r->at = auditpipe::timestamp::now();
          r->sender = "producer";
          r->payload = "a million rows";
          if (r.commit() != Status::ok) ++not_ok;
        }
      });
    }
    for (auto& t : threads) t.join();
    const auto report = logger.close(120s);
    EXPECT_EQ(not_ok.load(), 0);
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(total));
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), total);
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT source_id, seq) FROM audit_log"), total);
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT message_id) FROM audit_log"), total);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM (SELECT source_id FROM audit_log GROUP BY source_id "
                         "HAVING MIN(seq) <> 0 OR MAX(seq) <> COUNT(*) - 1) gaps"),
            0);
}

TEST(MysqlSink, SeveralWritersEachTakeTheirOwnConnection) {
  drop_table();
  auditpipe::Options o;
  o.capacity = 8192;
  o.batch_size = 250;
  o.writers = 4;
  auto sink = auditpipe::mysql::open(mysql_url_with(""));
  {
    auditpipe::Logger<AuditRow> logger(sink, o);
    std::vector<std::thread> threads;
    for (int p = 0; p < 4; ++p) {
      threads.emplace_back([&] {
        for (int i = 0; i < 20000; ++i) {
          auto r = logger.acquire();
          r->message_id = i;
          ASSERT_EQ(r.commit(), Status::ok);
        }
      });
    }
    for (auto& t : threads) t.join();
    // One per writer, opened in the background (a slow or refused connect
    // is retried after a pause, so the fourth may still be on its way), and
    // kept: 320 batches, a handful of connects at most (one a server
    // dropped is replaced, which is not what this tests).
    auto pool = *sink->connection_pool_stats();
    for (int i = 0; i < 300 && (pool.created - pool.closed < 4 || pool.opening > 0); ++i) {
      std::this_thread::sleep_for(100ms);
      pool = *sink->connection_pool_stats();
    }
    const std::string seen = "created " + std::to_string(pool.created) + ", closed " +
                             std::to_string(pool.closed) + ", connect failures " +
                             std::to_string(pool.connect_failures) + " (" +
                             pool.last_connect_error + ")";
    EXPECT_EQ(pool.created - pool.closed, 4u) << seen;
    EXPECT_LE(pool.created, 6u) << seen;
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(DISTINCT source_id, seq) FROM audit_log"), 80000);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 80000);
}

TEST(MysqlSink, FailsOverToTheNextHostWhenTheFirstRefuses) {
  drop_table();
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string url = "mysql://" + u.user + ":" + *u.password + "@127.0.0.1:1," +
                          u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port) + "/" + u.path;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
}

// mariadb://, the scheme MariaDB's own connectors take, reaches the same
// server as mysql://.
TEST(MysqlSink, TheMariadbSchemeConnects) {
  drop_table();
  std::string url = testing_support::mysql_test_url();
  ASSERT_EQ(url.rfind("mysql://", 0), 0u) << url;
  url.replace(0, std::string("mysql").size(), "mariadb");
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
    for (int i = 0; i < 5; ++i) ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 5);
}

TEST(MysqlSink, ClearErrorsAtStartAndNoPasswordInThem) {
  drop_table();
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string host = u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port);
  struct Case {
    std::string url;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"mysql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path, "Access denied"},
      {"mysql://" + u.user + ":Sekr1t-Pw@127.0.0.1:1/" + u.path, "cannot connect"},
      {"mysql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path + "?colour=blue",
       "unknown option 'colour'"},
      {"mysql://" + u.user + ":Sekr1t-Pw@" + host + "/" + u.path + "?write_path=fast",
       "write_path must be"},
      {"mysql://" + u.user + ":Sekr1t-Pw@" + host + ":notaport/" + u.path, "port 'notaport'"},
      {"mysql://" + u.user + ":Sekr1t-Pw@" + host, "no database name"},
      {"postgresql://" + u.user + ":Sekr1t-Pw@" + host + "/db", "scheme must be mysql://"},
      {"mysql://" + u.user + ":" + *u.password + "@" + host + "/no_such_db", "no_such_db"},
  };
  for (const auto& c : cases) {
    const std::string message = open_error(c.url);
    EXPECT_NE(message.find(c.expect), std::string::npos) << c.url << " -> " << message;
    EXPECT_EQ(message.find("Sekr1t-Pw"), std::string::npos) << message;
  }
}

TEST(MysqlSink, TlsWithAVerifiedCertificate) {
  drop_table();
  MysqlProbe probe;
  const long long before = probe.global_status().at("Ssl_accepts");
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(mysql_url_with(
        "tls=verify_identity&tls_ca=" + testing_support::mariadb_dir() + "/tls/ca.pem")));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  EXPECT_GE(probe.global_status().at("Ssl_accepts") - before, 2);  // set-up and pooled connections
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
}

// verify_ca checks the chain, not the name: a server reached by a name its
// certificate does not list (127.1, the same address written short; its
// certificate lists 127.0.0.1 and localhost) is taken under verify_ca and
// refused under verify_identity. (verify_ca checked the name too.)
TEST(MysqlSink, TlsVerifyCaChecksTheChainAndNotTheName) {
  drop_table();
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string by_other_name = "mysql://" + u.user + ":" + u.password.value_or("") +
                                    "@127.1:" + std::to_string(*u.hosts[0].port) + "/" + u.path +
                                    "?tls_ca=" + testing_support::mariadb_dir() +
                                    "/tls/ca.pem&tls=";
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(by_other_name + "verify_ca"));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
  const std::string e = open_error(by_other_name + "verify_identity");
  EXPECT_NE(e.find("cannot connect"), std::string::npos) << e;
  // The chain still counts under verify_ca reached by that name.
  const std::string wrong = open_error("mysql://" + u.user + ":" + u.password.value_or("") +
                                       "@127.1:" + std::to_string(*u.hosts[0].port) + "/" + u.path +
                                       "?tls=verify_ca&tls_ca=" + testing_support::mariadb_dir() +
                                       "/tls/server-cert.pem");
  EXPECT_NE(wrong.find("cannot connect"), std::string::npos) << wrong;
}

TEST(MysqlSink, TlsRefusesAServerItCannotVerify) {
  drop_table();
  // The server's own certificate is not a CA: verification must fail.
  const std::string e = open_error(mysql_url_with(
      "tls=verify_ca&tls_ca=" + testing_support::mariadb_dir() + "/tls/server-cert.pem"));
  EXPECT_NE(e.find("cannot connect"), std::string::npos) << e;
  const std::string missing_ca = open_error(mysql_url_with("tls=verify_ca"));
  EXPECT_NE(missing_ca.find("needs tls_ca"), std::string::npos) << missing_ca;
  // A CA with TLS off was ignored without a word: the connection was plain.
  const std::string off = open_error(mysql_url_with("tls=disabled&tls_ca=/etc/ssl/ca.pem"));
  EXPECT_NE(off.find("tls_ca is given but TLS is off"), std::string::npos) << off;
  const std::string default_off = open_error(mysql_url_with("tls_cert=/etc/ssl/c.pem"));
  EXPECT_NE(default_off.find("tls_cert is given but TLS is off"), std::string::npos) << default_off;
}

TEST(MysqlSink, ConnectsThroughAUnixSocket) {
  drop_table();
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  std::string socket;
  for (char ch : testing_support::mariadb_dir() + "/mysqld.sock") {
    socket += ch == '/' ? std::string("%2F") : std::string(1, ch);
  }
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(
        "mysql://" + u.user + ":" + *u.password + "@" + socket + "/" + u.path));
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  MysqlProbe probe;
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
  // socket= with a host other than localhost was ignored (the connection
  // went over TCP): refused.
  const std::string tcp = open_error(mysql_url_with("socket=/nonexistent.sock"));
  EXPECT_NE(tcp.find("socket= is used only for the host localhost"), std::string::npos) << tcp;
}

TEST(MysqlSink, AnExistingTableIsCheckedAtStart) {
  MysqlProbe probe;
  const std::string url = mysql_url_with("");
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (message_id BIGINT, source_id BIGINT, seq BIGINT, PRIMARY KEY "
      "(source_id, seq))");
  std::string e = open_error(url);
  EXPECT_NE(e.find("lacks the columns"), std::string::npos) << e;
  EXPECT_NE(e.find("payload"), std::string::npos) << e;

  const std::string columns =
      "at DATETIME(6), message_id BIGINT, status INT, channel INT, latency_ms DOUBLE, delivered "
      "BOOL, sender VARCHAR(32), receiver VARCHAR(32), payload VARCHAR(128), source_id BIGINT, "
      "seq BIGINT";
  drop_table();
  probe.exec("CREATE TABLE audit_log (" + columns + ")");
  e = open_error(url);
  EXPECT_NE(e.find("no unique key on (source_id, seq)"), std::string::npos) << e;

  drop_table();
  probe.exec("CREATE TABLE audit_log (" + columns +
             ", PRIMARY KEY (source_id, seq), UNIQUE KEY by_message (message_id))");
  e = open_error(url);
  EXPECT_NE(e.find("unique key by_message"), std::string::npos) << e;

  drop_table();
  probe.exec("CREATE TABLE audit_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, " + columns +
             ", UNIQUE KEY once (seq, source_id))");
  EXPECT_EQ(open_error(url), "");  // an auto-increment id the insert never writes is fine

  drop_table();
  e = open_error(mysql_url_with("create_table=false"));
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
}

TEST(MysqlSink, ARecordTheServerRefusesIsIsolatedAndTheRestWritten) {
  MysqlProbe probe;
  drop_table();
  probe.exec(
      "CREATE TABLE audit_log (at DATETIME(6), message_id BIGINT, status INT CHECK (status >= 0), "
      "channel INT, latency_ms DOUBLE, delivered BOOL, sender VARCHAR(32), receiver VARCHAR(32), "
      "payload VARCHAR(128), source_id BIGINT, seq BIGINT, PRIMARY KEY (source_id, seq))");
  auditpipe::Options o;
  o.flush_interval = 60s;
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(mysql_url_with("")), o);
    for (int i = 0; i < 100; ++i) {
      auto r = logger.acquire();
      r->message_id = i;
      r->status = i == 61 ? -5 : 1;
      r->latency_ms = i == 77 ? std::numeric_limits<double>::quiet_NaN() : 1.0;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_EQ(report.stats.rejected_by_sink, 2u);
    EXPECT_EQ(report.stats.written, 98u);
    EXPECT_TRUE(report.drained);
  }
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 98);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log WHERE message_id IN (61, 77)"), 0);
}

// An existing column of a type that cannot hold the record's values
// (through the MySQL dialect's entries of the shared table check) is
// refused at start, naming table, column, found and accepted types; wider
// types pass.
TEST(MysqlSink, AnExistingColumnOfTheWrongTypeIsRefusedAtStart) {
  MysqlProbe probe;
  auto make_table = [&](const std::string& status_type, const std::string& at_type) {
    drop_table();
    probe.exec("CREATE TABLE audit_log (at " + at_type + " NOT NULL, message_id BIGINT NOT NULL, " +
               "status " + status_type +
               " NOT NULL, channel INT UNSIGNED NOT NULL, latency_ms DOUBLE NOT NULL, "
               "delivered BOOLEAN NOT NULL, sender VARCHAR(64) NOT NULL, receiver TEXT NOT NULL, "
               "payload MEDIUMTEXT NOT NULL, source_id BIGINT NOT NULL, seq BIGINT NOT NULL, "
               "PRIMARY KEY (source_id, seq)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
  };
  make_table("VARCHAR(20)", "DATETIME(6)");
  std::string e = open_error(mysql_url_with(""));
  EXPECT_NE(e.find("audit_log"), std::string::npos) << e;
  EXPECT_NE(e.find("status is varchar(20) but the record's int32 needs int, bigint"),
            std::string::npos)
      << e;
  make_table("INT UNSIGNED", "DATETIME");
  e = open_error(mysql_url_with(""));
  EXPECT_NE(e.find("status is int(10) unsigned"), std::string::npos) << e;
  EXPECT_NE(e.find("at is datetime"), std::string::npos) << e;
  make_table("BIGINT", "DATETIME(6)");
  EXPECT_EQ(open_error(mysql_url_with("")), "");
}

// A text column narrower than the records' text is warned of at start, in
// the column's own unit: MySQL's TEXT types hold bytes (TINYTEXT 255),
// VARCHAR(n) characters; and so is one in a character set other than utf8mb4.
TEST(MysqlSink, ANarrowOrLatin1TextColumnIsWarnedOf) {
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS narrow_text");
  probe.exec(
      "CREATE TABLE narrow_text (source_id BIGINT NOT NULL, seq BIGINT NOT NULL, "
      "note TINYTEXT NOT NULL, tag VARCHAR(100) NOT NULL, legacy VARCHAR(500) CHARACTER SET "
      "latin1 NOT NULL, PRIMARY KEY (source_id, seq)) "
      "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
  testing_support::CapturedWarnings warnings;
  {
    auditpipe::Schema schema("narrow_text", {{.name = "note", .max_length = 1000},
                                             {.name = "tag", .max_length = 400},
                                             {.name = "legacy", .max_length = 100}});
    auditpipe::DynamicLogger logger(schema, auditpipe::mysql::open(mysql_url_with("")));
  }
  const std::string w = warnings.text();
  EXPECT_NE(
      w.find("narrow_text.note (tinytext) holds 255 bytes but records carry up to 1000 bytes"),
      std::string::npos)
      << w;
  EXPECT_NE(w.find("narrow_text.tag (varchar(100)) holds 100 characters but records carry up to "
                   "400 bytes"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("narrow_text.legacy is in character set latin1"), std::string::npos) << w;
  EXPECT_EQ(w.find("narrow_text.note is in character set"), std::string::npos) << w;
  probe.exec("DROP TABLE narrow_text");
}

}  // namespace
