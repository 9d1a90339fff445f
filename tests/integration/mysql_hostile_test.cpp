// The MySQL sink against what a hostile new user found (issue 11), on the
// real throwaway MariaDB server: a small max_allowed_packet on every write
// path, a record that cannot fit, a charset that would corrupt text,
// non-ASCII text byte-exact, a privilege revoked under a running logger,
// and connect errors that must not show the password.
#include <gtest/gtest.h>
#include <mysql.h>

#include <chrono>
#include <string>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/sink/url.h"
#include "eventually.h"
#include "mysql_probe.h"
#include "verify_run.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::Status;
using testing_support::AuditRow;
using testing_support::eventually;
using testing_support::mysql_url_with;
using testing_support::MysqlProbe;

// A record with room for text larger than the smallest packet MariaDB allows.
struct WideRow {
  std::int64_t message_id = 0;
  auditpipe::timestamp at;
  auditpipe::fixed_string<2000> payload;
};

constexpr auto describe(auditpipe::type_tag<WideRow>) {
  return auditpipe::table<WideRow>("audit_wide", AUDITPIPE_COLUMN(WideRow, message_id),
                                   AUDITPIPE_COLUMN(WideRow, at),
                                   AUDITPIPE_COLUMN(WideRow, payload));
}

// The server as root, through its unix socket (scripts/mariadb.sh creates
// root with socket access): for SET GLOBAL, users and grants.
class MysqlAdmin {
 public:
  MysqlAdmin() {
    mysql_ = mysql_init(nullptr);
    const std::string socket = testing_support::mariadb_dir() + "/mysqld.sock";
    if (mysql_real_connect(mysql_, "localhost", "root", "", nullptr, 0, socket.c_str(), 0) ==
        nullptr) {
      ADD_FAILURE() << "admin cannot connect through " << socket << ": " << mysql_error(mysql_);
    }
  }
  ~MysqlAdmin() { mysql_close(mysql_); }
  MysqlAdmin(const MysqlAdmin&) = delete;
  MysqlAdmin& operator=(const MysqlAdmin&) = delete;

  void exec(const std::string& sql) {
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
      ADD_FAILURE() << "admin query failed: " << sql << ": " << mysql_error(mysql_);
      return;
    }
    if (MYSQL_RES* r = mysql_store_result(mysql_)) mysql_free_result(r);
  }
  std::string value(const std::string& sql) {
    std::string out;
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return out;
    if (MYSQL_RES* r = mysql_store_result(mysql_)) {
      if (MYSQL_ROW row = mysql_fetch_row(r); row && row[0]) out = row[0];
      mysql_free_result(r);
    }
    return out;
  }

 private:
  MYSQL* mysql_ = nullptr;
};

// Sets the server's max_allowed_packet (new connections see it) and
// restores it. net_buffer_length goes down to MariaDB's minimum too: the
// server takes any packet that fits its initial buffer, so only then is
// max_allowed_packet the limit it enforces.
class SmallPacket {
 public:
  explicit SmallPacket(unsigned long bytes)
      : packet_(admin_.value("SELECT @@global.max_allowed_packet")),
        buffer_(admin_.value("SELECT @@global.net_buffer_length")) {
    admin_.exec("SET GLOBAL net_buffer_length = 1024");
    admin_.exec("SET GLOBAL max_allowed_packet = " + std::to_string(bytes));
  }
  ~SmallPacket() {
    admin_.exec("SET GLOBAL max_allowed_packet = " + packet_);
    admin_.exec("SET GLOBAL net_buffer_length = " + buffer_);
  }
  SmallPacket(const SmallPacket&) = delete;
  SmallPacket& operator=(const SmallPacket&) = delete;

 private:
  MysqlAdmin admin_;
  std::string packet_, buffer_;
};

class MysqlHostile : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    MysqlProbe probe;
    probe.exec("DROP TABLE IF EXISTS audit_wide");
    probe.exec("DROP TABLE IF EXISTS audit_log, audit_log_seals, audit_log_unsealed");
    probe.exec("DROP TABLE IF EXISTS audit_log_seals");
    probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
  }
  std::string url(const std::string& more = "") const {
    return mysql_url_with("write_path=" + GetParam() + more);
  }
};

// D2, D3: 2,000 records of 300 bytes at max_allowed_packet 1024 (MariaDB's
// minimum), 2048 and 4096 all land, each batch cut into statements that
// fit; before, the bulk cut `max_allowed_packet - 4096` wrapped below 4096
// (every write refused and retried forever) and refused everything at 4096,
// and the text path refused every record at 1024.
TEST_P(MysqlHostile, SmallMaxAllowedPacketWritesEveryRecordThatFits) {
  for (unsigned long packet : {1024ul, 2048ul, 4096ul}) {
    MysqlProbe().exec("DROP TABLE IF EXISTS audit_wide");
    SmallPacket small(packet);
    constexpr int rows = 2000;
    auditpipe::Options o;
    o.writers = 1;
    o.capacity = rows;
    o.batch_size = rows;
    o.flush_interval = 60s;  // one batch of them all
    auditpipe::Logger<WideRow> logger(auditpipe::mysql::open(url()), o);
    for (int i = 0; i < rows; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      r->at = auditpipe::timestamp{1'700'000'000'123'456 + i};
      r->payload = std::string(300, static_cast<char>('a' + i % 26));
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close(15s);
    EXPECT_TRUE(report.drained) << "max_allowed_packet " << packet;
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(rows)) << packet;
    EXPECT_EQ(report.stats.rejected_by_sink, 0u) << packet;
    EXPECT_EQ(MysqlProbe().scalar("SELECT COUNT(*) FROM audit_wide WHERE LENGTH(payload) = 300"),
              rows)
        << packet;
  }
}

// D3: a record larger than any packet the server takes is refused as data
// and counted, the rest written, nothing retried forever. LOAD DATA streams
// its rows in packets of any size, so there every record fits.
TEST_P(MysqlHostile, ARecordThatCannotFitIsRefusedAndTheRestWritten) {
  SmallPacket small(1024);
  auditpipe::Options o;
  o.writers = 1;
  o.flush_interval = 60s;
  auditpipe::Logger<WideRow> logger(auditpipe::mysql::open(url()), o);
  for (int i = 0; i < 20; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    r->payload = std::string(i == 7 ? 1500 : 200, 'w');
    ASSERT_EQ(r.commit(), Status::ok);
  }
  const auto report = logger.close(15s);
  EXPECT_TRUE(report.drained);
  const bool streams = GetParam() == "load_data";
  EXPECT_EQ(report.stats.rejected_by_sink, streams ? 0u : 1u);
  EXPECT_EQ(report.stats.written, streams ? 20u : 19u);
  EXPECT_EQ(MysqlProbe().scalar("SELECT COUNT(*) FROM audit_wide"), streams ? 20 : 19);
}

// D5: text that is not ASCII is stored byte for byte (the connection is
// utf8mb4, what the sink sends), on every write path.
TEST_P(MysqlHostile, NonAsciiTextIsStoredByteExact) {
  const std::string text = "\xF0\x9F\x98\x80 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xC3\x9F";
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url()));
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->sender = text;
    r->payload = text;
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_TRUE(logger.close().drained);
  }
  const auto rows = MysqlProbe().rows("SELECT HEX(sender), HEX(payload) FROM audit_log");
  ASSERT_EQ(rows.size(), 1u);
  const std::string hex = "F09F988020636166C3A920E697A5E69CAC20C39F";
  EXPECT_EQ(*rows[0][0], hex);
  EXPECT_EQ(*rows[0][1], hex);
}

// D5: a connection charset other than utf8mb4 would make the server
// re-encode the UTF-8 the sink sends (an emoji stored as
// C3B0C5B8CB9CE282AC with latin1): refused at open, by name.
TEST_P(MysqlHostile, ACorruptingCharsetIsRefusedAtOpen) {
  for (const char* charset : {"latin1", "ascii", "utf8", "utf8mb3", "binary", "cp1252"}) {
    std::string message;
    try {
      auditpipe::Logger<AuditRow> logger(
          auditpipe::mysql::open(url("&charset=" + std::string(charset))));
    } catch (const auditpipe::error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("charset=" + std::string(charset)), std::string::npos)
        << charset << " -> " << message;
    EXPECT_NE(message.find("utf8mb4"), std::string::npos) << message;
  }
  // utf8mb4, in any case, is what the sink writes anyway.
  auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url("&charset=UTF8MB4")));
  EXPECT_TRUE(logger.close().drained);
}

INSTANTIATE_TEST_SUITE_P(Paths, MysqlHostile, ::testing::Values("bulk", "text", "load_data"),
                         [](const auto& param_info) { return param_info.param; });

// A user whose INSERT privilege is revoked while the logger runs: the
// sink reports a configuration failure (health down, with the server's
// reason), loses nothing, and writes again by itself once the privilege is
// back.
TEST(MysqlConfiguration, ARevokedInsertPrivilegeIsHealthDownUntilTheGrantIsBack) {
  MysqlAdmin admin;
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log, audit_log_seals, audit_log_unsealed");
  probe.exec("DROP TABLE IF EXISTS audit_log_seals");
  probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
  {  // The table, created as the test user.
    auditpipe::Logger<AuditRow> setup(auditpipe::mysql::open(mysql_url_with("")));
    setup.close();
  }
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string account = "'ap_revoked'@'127.0.0.1'";
  const std::string table = "`" + u.path + "`.audit_log";
  admin.exec("DROP USER IF EXISTS " + account);
  admin.exec("CREATE USER " + account + " IDENTIFIED BY 'Rev0ked-Pw'");
  // UPDATE for the insert's ON DUPLICATE KEY UPDATE seq = seq.
  admin.exec("GRANT SELECT, INSERT, UPDATE ON " + table + " TO " + account);
  const std::string url =
      "mysql://ap_revoked:Rev0ked-Pw@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" + u.path +
      "?create_table=false&pool_size=1";
  auditpipe::Options o;
  o.writers = 1;
  o.flush_interval = 20ms;
  // A configuration failure waits the longest backoff at once; a transient
  // one would start at 10 ms and take three failures to count as down.
  o.retry_backoff_max = 2s;
  auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url), o);
  auto log = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
  };
  log(0, 50);
  ASSERT_TRUE(eventually([&] { return logger.stats().written == 50; }));

  admin.exec("REVOKE INSERT ON " + table + " FROM " + account);
  log(50, 100);
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::down; }))
      << auditpipe::to_string(logger.stats().health);
  const auto down = logger.stats();
  EXPECT_EQ(down.write_failures, 1u) << "down at the first failure, as a configuration failure";
  EXPECT_NE(down.health_reason.find("INSERT command denied"), std::string::npos)
      << down.health_reason;
  EXPECT_EQ(down.health_reason.find("Rev0ked-Pw"), std::string::npos) << down.health_reason;
  EXPECT_EQ(down.rejected_by_sink, 0u);
  EXPECT_EQ(down.written, 50u);

  admin.exec("GRANT INSERT ON " + table + " TO " + account);
  EXPECT_TRUE(eventually([&] { return logger.stats().written == 100; }, 30s));
  EXPECT_TRUE(eventually([&] { return logger.stats().health == auditpipe::Health::ok; }));
  const auto report = logger.close();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  EXPECT_EQ(report.stats.dropped, 0u);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 100);
  admin.exec("DROP USER IF EXISTS " + account);
}

}  // namespace

namespace {

// Connect errors from the real server (wrong password, unknown database,
// unreachable port) with hostile passwords, one equal to the user name
// (which the server's "Access denied for user ..." echoes).
TEST(MysqlSecret, NoPasswordInConnectErrors) {
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string host = u.hosts[0].host + ":" + std::to_string(*u.hosts[0].port);
  const std::vector<std::string> passwords = {"S3/cr3t",           "S3?cr#3t",
                                              "S3@cr:3t",          "S3 'cr\"3t\\",
                                              std::string(u.user), std::string("127.0.0.1")};
  for (const std::string& password : passwords) {
    for (const std::string& url : std::vector<std::string>{
             "mysql://" + u.user + ":" + password + "@" + host + "/" + u.path,
             "mysql://" + u.user + ":" + password + "@127.0.0.1:1/" + u.path,
             "mysql://" + u.user + "@" + host + "/no_such_db?password=" + password}) {
      std::string message;
      try {
        auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
      } catch (const auditpipe::error& e) {
        message = e.what();
      }
      EXPECT_FALSE(message.empty()) << url;
      EXPECT_EQ(message.find(password), std::string::npos) << url << " -> " << message;
    }
  }
}

}  // namespace

// A user who may only read is refused at construction on every write path,
// with the server's reason and without the password (only the bulk path,
// which prepares its insert, used to find out before the first batch).
TEST(MysqlConfiguration, AUserWhoMayNotInsertIsRefusedAtStartOnEveryPath) {
  MysqlAdmin admin;
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log, audit_log_seals, audit_log_unsealed");
  probe.exec("DROP TABLE IF EXISTS audit_log_seals");
  probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
  {
    auditpipe::Logger<AuditRow> setup(auditpipe::mysql::open(mysql_url_with("")));
    setup.close();
  }
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string account = "'ap_reader'@'127.0.0.1'";
  admin.exec("DROP USER IF EXISTS " + account);
  admin.exec("CREATE USER " + account + " IDENTIFIED BY 'Read0nly-Pw'");
  admin.exec("GRANT SELECT ON `" + u.path + "`.audit_log TO " + account);
  for (const std::string path : {"bulk", "text", "load_data"}) {
    const std::string url =
        "mysql://ap_reader:Read0nly-Pw@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" +
        u.path + "?create_table=false&write_path=" + path;
    try {
      auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
      ADD_FAILURE() << path << ": a read-only user was accepted";
    } catch (const auditpipe::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("may not INSERT"), std::string::npos) << path << ": " << what;
      EXPECT_NE(what.find("1142"), std::string::npos) << path << ": " << what;
      EXPECT_EQ(what.find("Read0nly-Pw"), std::string::npos) << path << ": " << what;
    }
  }
  // Allowed to ALTER the table but not to INSERT, with migrate=add_columns
  // and a column missing: refused before the column is added (before, it
  // was added, then the open refused).
  probe.exec("ALTER TABLE audit_log DROP COLUMN payload");
  admin.exec("GRANT ALTER ON `" + u.path + "`.audit_log TO " + account);
  const std::string url =
      "mysql://ap_reader:Read0nly-Pw@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" + u.path +
      "?create_table=false&migrate=add_columns";
  try {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
    ADD_FAILURE() << "a read-only user was accepted";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("may not INSERT"), std::string::npos) << e.what();
  }
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
                         "DATABASE() AND table_name = 'audit_log' AND column_name = 'payload'"),
            0);
  admin.exec("DROP USER " + account);
}

// A least-privilege writer account, INSERT only: the insert's ON DUPLICATE
// KEY UPDATE seq = seq also needs UPDATE (on every column it inserts) and
// SELECT on seq. Refused at start with
// the grants named (it said "may not INSERT" of a user who may); given
// them, it writes. Under seal= the writer reads rows back: an account
// without SELECT on the table is refused at start too (before, it started,
// and the first batch that met a stored key failed at every retry).
TEST(MysqlConfiguration, AnInsertOnlyUserIsRefusedAtStartWithTheGrantsItLacks) {
  MysqlAdmin admin;
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log, audit_log_seals, audit_log_unsealed");
  {
    auditpipe::Logger<AuditRow> setup(auditpipe::mysql::open(mysql_url_with("")));
    setup.close();
  }
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string account = "'ap_inserter'@'127.0.0.1'";
  const std::string db = "`" + u.path + "`.";
  admin.exec("DROP USER IF EXISTS " + account);
  admin.exec("CREATE USER " + account + " IDENTIFIED BY 'Ins3rt-Only'");
  admin.exec("GRANT INSERT ON " + db + "audit_log TO " + account);
  const std::string base =
      "mysql://ap_inserter:Ins3rt-Only@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" +
      u.path + "?create_table=false";
  auto open_error = [](const std::string& url) -> std::string {
    try {
      auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url));
    } catch (const auditpipe::error& e) {
      return e.what();
    }
    return "";
  };
  for (const std::string path : {"bulk", "text", "load_data"}) {
    const std::string what = open_error(base + "&write_path=" + path);
    EXPECT_NE(what.find("GRANT INSERT, UPDATE, SELECT (seq) ON"), std::string::npos)
        << path << ": " << what;
    EXPECT_EQ(what.find("Ins3rt-Only"), std::string::npos) << path << ": " << what;
  }
  auto write = [](const std::string& to, int n) {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(to));
    for (int i = 0; i < n; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(n));
  };
  admin.exec("GRANT UPDATE, SELECT (seq) ON " + db + "audit_log TO " + account);
  write(base, 20);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 20);

  probe.exec("DELETE FROM audit_log");
  {  // The seals tables, made by the test user.
    auditpipe::Logger<AuditRow> setup(auditpipe::mysql::open(mysql_url_with("seal=hash")));
    setup.close();
  }
  probe.exec("DELETE FROM audit_log_seals");
  admin.exec("GRANT SELECT, INSERT, DELETE ON " + db + "audit_log_unsealed TO " + account);
  admin.exec("GRANT SELECT ON " + db + "audit_log_seals TO " + account);
  const std::string sealed = base + "&seal=hash";
  const std::string what = open_error(sealed);
  EXPECT_NE(what.find("cannot be read by this user"), std::string::npos) << what;
  EXPECT_NE(what.find("grant it SELECT on the table"), std::string::npos) << what;
  EXPECT_EQ(what.find("Ins3rt-Only"), std::string::npos) << what;
  admin.exec("GRANT SELECT ON " + db + "audit_log TO " + account);
  // Able to read the seals but not to store them: it started, and every
  // seal failed.
  const std::string seals_refused = open_error(sealed);
  EXPECT_NE(seals_refused.find("may not store seals in the seals table `audit_log_seals`"),
            std::string::npos)
      << seals_refused;
  EXPECT_NE(seals_refused.find("grant it SELECT and INSERT on it, and UPDATE"), std::string::npos)
      << seals_refused;
  EXPECT_EQ(seals_refused.find("Ins3rt-Only"), std::string::npos) << seals_refused;
  admin.exec("GRANT INSERT, UPDATE ON " + db + "audit_log_seals TO " + account);
  write(sealed, 20);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 20);
  EXPECT_EQ(probe.scalar("SELECT COALESCE(SUM(row_count), 0) FROM audit_log_seals"), 20);
  admin.exec("DROP USER " + account);
}

// Health said why writes failed as of the last failed write: a server
// that dropped the connections and then refused the account's password
// (1045) was reported as the dropped connection until a lease gave up,
// connection_timeout (30 s) later, while the pool's connects were failing
// for another reason. While no connection is open, the latest connect
// error is said too.
TEST(MysqlConfiguration, HealthSaysWhatTheConnectsMeetNow) {
  MysqlAdmin admin;
  MysqlProbe probe;
  probe.exec("DROP TABLE IF EXISTS audit_log, audit_log_seals, audit_log_unsealed");
  {
    auditpipe::Logger<AuditRow> setup(auditpipe::mysql::open(mysql_url_with("")));
    setup.close();
  }
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string account = "'ap_rotated'@'127.0.0.1'";
  admin.exec("DROP USER IF EXISTS " + account);
  admin.exec("CREATE USER " + account + " IDENTIFIED BY 'Before-Pw1'");
  admin.exec("GRANT SELECT, INSERT, UPDATE ON `" + u.path + "`.audit_log TO " + account);
  const std::string url =
      "mysql://ap_rotated:Before-Pw1@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" + u.path +
      "?create_table=false&pool_size=1";
  auditpipe::Options o;
  o.writers = 1;
  auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(url), o);
  auto log = [&](int id) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = id;
    ASSERT_EQ(r.commit(), Status::ok);
  };
  log(1);
  ASSERT_TRUE(logger.flush(10s));
  // The password changes and the account's connections are cut.
  admin.exec("ALTER USER " + account + " IDENTIFIED BY 'After-Pw2'");
  for (int i = 0; i < 50; ++i) {
    const std::string id = admin.value(
        "SELECT id FROM information_schema.processlist WHERE user = 'ap_rotated' LIMIT 1");
    if (id.empty()) break;
    admin.value("KILL CONNECTION " + id);  // may have ended on its own: no matter
  }
  log(2);
  EXPECT_TRUE(eventually([&] {
    const auditpipe::Stats s = logger.stats();
    return s.health_reason.find("1045") != std::string::npos;
  })) << "health still says: "
      << logger.stats().health_reason;
  const std::string reason = logger.stats().health_reason;
  EXPECT_EQ(reason.find("After-Pw2"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("Before-Pw1"), std::string::npos) << reason;
  // The password back: the record is written.
  admin.exec("ALTER USER " + account + " IDENTIFIED BY 'Before-Pw1'");
  EXPECT_TRUE(logger.flush(30s));
  EXPECT_TRUE(logger.close().drained);
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 2);
  admin.exec("DROP USER " + account);
}

// verify by an account granted SELECT on the table and its seals but not on
// <table>_unsealed (where a start keeps what it found unsealed, and where a
// forged find is tampering): it said "verified" (exit 0) over a forged
// find it could not see. It now says it cannot read that table (exit 4),
// without the password; granted, it reads it and names the forged find.
TEST(MysqlConfiguration, VerifyByAnAccountThatCannotReadTheFindsSaysSo) {
  MysqlAdmin admin;
  MysqlProbe probe;
  for (const char* t : {"audit_log", "audit_log_seals", "audit_log_unsealed"}) {
    probe.exec(std::string("DROP TABLE IF EXISTS ") + t);
  }
  {
    auditpipe::Logger<AuditRow> logger(auditpipe::mysql::open(mysql_url_with("seal=hash")));
    for (int i = 0; i < 10; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      ASSERT_EQ(r.commit(), Status::ok);
    }
    ASSERT_TRUE(logger.close().drained);
  }
  const auto u = auditpipe::parse_url(testing_support::mysql_test_url());
  const std::string account = "'ap_verifier'@'127.0.0.1'";
  admin.exec("DROP USER IF EXISTS " + account);
  admin.exec("CREATE USER " + account + " IDENTIFIED BY 'Verif1er-Pw'");
  for (const char* t : {"audit_log", "audit_log_seals"}) {
    admin.exec("GRANT SELECT ON `" + u.path + "`." + t + " TO " + account);
  }
  const std::string url =
      "mysql://ap_verifier:Verif1er-Pw@127.0.0.1:" + std::to_string(*u.hosts[0].port) + "/" +
      u.path;
  probe.exec(
      "INSERT INTO audit_log_unsealed (source_id, after_no, runs, mac) VALUES (7, 1, '0-9', "
      "'forged')");
  auto v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 4) << v.out;
  EXPECT_NE(v.out.find("cannot read audit_log_unsealed"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("Verif1er-Pw"), std::string::npos) << v.out;
  admin.exec("GRANT SELECT ON `" + u.path + "`.audit_log_unsealed TO " + account);
  v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 1) << v.out;
  EXPECT_NE(v.out.find("forged find: audit_log_unsealed: source_id 7 seq 0-9"), std::string::npos)
      << v.out;
  probe.exec("DELETE FROM audit_log_unsealed");
  v = testing_support::run_verify(url, "audit_log");
  EXPECT_EQ(v.status, 0) << v.out;
  // A table sealed before finds were kept has none: nothing to read.
  probe.exec("DROP TABLE audit_log_unsealed");
  v = testing_support::run_verify(testing_support::mysql_test_url(), "audit_log");
  EXPECT_EQ(v.status, 0) << v.out;
  // --accept-late names a seal the table has, or later late seals would
  // be accepted unseen.
  v = testing_support::run_verify(testing_support::mysql_test_url(), "audit_log",
                                  "--accept-late 1000000");
  EXPECT_EQ(v.status, 2) << v.out;
  EXPECT_NE(v.out.find("the newest seal is"), std::string::npos) << v.out;
  admin.exec("DROP USER " + account);
}
