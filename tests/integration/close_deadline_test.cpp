// close(deadline) kept when the database hangs or dies mid-run, a logger
// started while its database is down, and failover to a host that lacks
// the table: on real MariaDB and PostgreSQL servers.
//
// The servers that get stopped (SIGSTOP) or killed are throwaway ones of
// this binary's own (scripts/mariadb.sh, scripts/postgres.sh in temporary
// directories, on free ports), destroyed when it ends, so the shared test
// servers are never disturbed. Those (AUDITPIPE_TEST_MYSQL_URL,
// AUDITPIPE_TEST_POSTGRES_URL) serve as the second host of a failover list
// that lacks the table, and for the checks that need a server that is up.
// Each test prints what it measured ("[ close ] ...").
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dirent.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "auditpipe/fixed_string.h"
#include "auditpipe/logger.h"
#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/postgresql/postgresql_sink.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "auditpipe/table.h"
#include "captured_warnings.h"
#include "eventually.h"
#include "mysql_probe.h"
#include "postgresql_probe.h"
#include "temp_dir.h"

namespace {

using namespace std::chrono_literals;
using auditpipe::Options;
using Clock = std::chrono::steady_clock;

// Its own table, so that nothing here touches the other tests' audit_log.
struct DeadlineRow {
  std::int64_t message_id = 0;
  auditpipe::fixed_string<64> payload;
};

constexpr auto describe(auditpipe::type_tag<DeadlineRow>) {
  return auditpipe::table<DeadlineRow>("close_deadline_log",
                                       AUDITPIPE_COLUMN(DeadlineRow, message_id),
                                       AUDITPIPE_COLUMN(DeadlineRow, payload));
}

using Logger = auditpipe::Logger<DeadlineRow>;
constexpr const char* table_name = "close_deadline_log";

// A loopback port nobody listens on now (the kernel's pick).
unsigned free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A database server of this binary's own: scripts/<kind>.sh in a temporary
// directory, on a free port.
class ThrowawayServer {
 public:
  enum class Kind { mariadb, postgres };

  explicit ThrowawayServer(Kind kind) : kind_(kind), port_(free_port()) {
    char pattern[] = "/tmp/auditpipe-close-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  ~ThrowawayServer() {
    signal_all(SIGCONT);
    run("destroy");
  }
  ThrowawayServer(const ThrowawayServer&) = delete;
  ThrowawayServer& operator=(const ThrowawayServer&) = delete;

  // scripts/<kind>.sh <command> for this server; true if it succeeded.
  bool run(const std::string& command) const {
    const std::string env = kind_ == Kind::mariadb ? "MARIADB" : "POSTGRES";
    const std::string script = kind_ == Kind::mariadb ? "mariadb.sh" : "postgres.sh";
    const std::string line = "AUDITPIPE_" + env + "_DIR=" + dir_ + " AUDITPIPE_" + env +
                             "_PORT=" + std::to_string(port_) + " " + AUDITPIPE_SOURCE_DIR +
                             "/scripts/" + script + " " + command;
    return std::system(line.c_str()) == 0;
  }

  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url(const std::string& options = "") const {
    const std::string base =
        kind_ == Kind::mariadb
            ? "mysql://auditpipe:auditpipe-test@" + host() + "/auditpipe_test"
            : "postgresql://auditpipe:auditpipe-test@" + host() + "/auditpipe_test";
    return options.empty() ? base : base + "?" + options;
  }

  // Sends `sig` to the server and every process it started (PostgreSQL's
  // backends are its children: stopping only the postmaster would leave
  // them answering).
  void signal_all(int sig) const {
    const pid_t server = pid();
    if (server <= 0) return;
    kill(server, sig);
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* d = readdir(proc)) {
      const pid_t p = std::atoi(d->d_name);
      if (p <= 0) continue;
      std::ifstream stat("/proc/" + std::string(d->d_name) + "/stat");
      std::string line;
      std::getline(stat, line);
      // pid (comm) state ppid ...: the command may contain spaces.
      const auto close_paren = line.rfind(')');
      if (close_paren == std::string::npos) continue;
      char state = 0;
      int parent = 0;
      if (std::sscanf(line.c_str() + close_paren + 1, " %c %d", &state, &parent) == 2 &&
          parent == server) {
        kill(p, sig);
      }
    }
    closedir(proc);
  }

 private:
  pid_t pid() const {
    std::ifstream f(kind_ == Kind::mariadb ? dir_ + "/mysqld.pid" : dir_ + "/data/postmaster.pid");
    pid_t p = 0;
    f >> p;
    return p;
  }

  Kind kind_;
  unsigned port_;
  std::string dir_;
};

// The shared test servers' host and port (the second host of a failover
// list), and their URLs with the host list replaced.
std::string host_of(const std::string& url) {
  const auto u = auditpipe::parse_url(url);
  return u.hosts.at(0).host + ":" + std::to_string(u.hosts[0].port.value());
}
std::string with_hosts(const std::string& scheme, const std::string& hosts,
                       const std::string& options) {
  std::string url = scheme + "://auditpipe:auditpipe-test@" + hosts + "/auditpipe_test";
  return options.empty() ? url : url + "?" + options;
}

// Producers logging steadily until stopped; never blocked (Overflow::drop
// unless the options say otherwise).
struct Producers {
  std::atomic<bool> stop{false};
  std::atomic<long long> ok{0}, not_ok{0}, next{0};
  std::vector<std::thread> threads;

  void start(Logger& logger, int n) {
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([&] {
        while (!stop.load()) {
          auto r = logger.acquire();
          auditpipe::Status s = r.status();
          if (r) {
            r->message_id = next.fetch_add(1);
            r->payload = "close deadline test";
            s = r.commit();
          }
          (s == auditpipe::Status::ok ? ok : not_ok)++;
          std::this_thread::sleep_for(200us);
        }
      });
    }
  }
  void join() {
    stop = true;
    for (auto& t : threads) t.join();
    threads.clear();
  }
};

Options running_options() {
  Options o;
  o.capacity = 4096;
  o.batch_size = 100;
  o.writers = 2;
  o.overflow = auditpipe::Overflow::drop;
  o.retry_backoff_max = 200ms;
  return o;
}

constexpr auto deadline = 1000ms;
// What close() may take beyond its deadline (Sink::cancel's promise).
constexpr auto grace = 100ms;

// close(deadline) on a logger whose writes cannot finish: it must give up
// at the deadline and be back within `grace`.
void expect_close_keeps_its_deadline(Logger& logger, const char* what) {
  const auto t0 = Clock::now();
  const auto report = logger.close(deadline);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  std::printf("[ close ] %s: close(%lld ms) took %lld ms (drained %d, unwritten %llu)\n", what,
              static_cast<long long>(deadline.count()), static_cast<long long>(took.count()),
              report.drained ? 1 : 0, static_cast<unsigned long long>(report.unwritten));
  EXPECT_FALSE(report.drained) << "the writes finished: the test proves nothing";
  EXPECT_LE(took, deadline + grace);
}

// A MariaDB server of this binary's own, started once for all its tests.
class MysqlDeadline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ThrowawayServer(ThrowawayServer::Kind::mariadb);
    ASSERT_TRUE(server_->run("start"));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(server_->run("start"));  // a test before may have left it down
    testing_support::MysqlProbe(auditpipe::parse_url(server_->url()))
        .exec(std::string("DROP TABLE IF EXISTS ") + table_name + ", " + table_name + "_seals, " +
              table_name + "_unsealed");
  }
  void TearDown() override { server_->signal_all(SIGCONT); }

  static long long rows(const std::string& url, const std::string& what = "COUNT(*)") {
    testing_support::MysqlProbe probe(auditpipe::parse_url(url));
    return probe.scalar("SELECT " + what + " FROM " + table_name);
  }

  // A table sealed with seal=hash holding one row; then the server stops.
  static void seal_one_row_then_stop_the_server();
  // The table still holds only that row, and `logger` kept its 10
  // records in its spill directory.
  static void expect_the_one_row_alone(Logger& logger);

  static ThrowawayServer* server_;
};
ThrowawayServer* MysqlDeadline::server_ = nullptr;

// Once the server is up, every record logged during the outage arrives,
// once: `rows(expr)` evaluates a count on the server's table.
template <class Rows>
void expect_every_record_arrives_once(Logger& logger, long long n, Rows rows,
                                      const std::string& count_distinct, const char* what) {
  const bool arrived = testing_support::eventually(
      [&] {
        return logger.stats().written + logger.stats().replayed >= static_cast<std::uint64_t>(n);
      },
      60s);
  const auto report = logger.close(30s);
  const long long stored = rows("COUNT(*)");
  const long long distinct = rows(count_distinct);
  std::printf(
      "[ close ] %s started during an outage: %lld committed, %lld rows, %lld distinct, "
      "spilled %llu\n",
      what, n, stored, distinct, static_cast<unsigned long long>(report.stats.spilled));
  EXPECT_TRUE(arrived);
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(stored, n);
  EXPECT_EQ(distinct, n);
}

// `url` with its test password replaced: starting fails as a configuration
// error naming `why`, even with a spill directory, never as unreachable.
template <class Open>
void expect_a_wrong_password_fails_the_start(std::string url, Open open, const std::string& why) {
  url.replace(url.find("auditpipe-test"), std::string("auditpipe-test").size(), "wrong-password");
  testing_support::TempDir dir;
  Options o;
  o.spill_path = dir.path() / "spill";
  try {
    Logger logger(open(url), o);
    ADD_FAILURE() << "started with a wrong password";
  } catch (const auditpipe::unreachable& e) {
    ADD_FAILURE() << "a wrong password taken for an unreachable server: " << e.what();
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

// A logger started while its server is down: a spill directory for what
// the pool cannot hold, retries that come back quickly once it is up.
Options outage_options(const testing_support::TempDir& dir) {
  Options o;
  o.capacity = 1024;
  o.batch_size = 200;
  o.writers = 2;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.retry_backoff_max = 200ms;
  return o;
}

// Every record logged while the server is down is accepted.
void log_during_outage(Logger& logger, long long n) {
  for (long long i = 0; i < n; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r) << "record " << i;
    r->message_id = i;
    r->payload = "written after the outage";
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
}

// Before cancel(), close() waited here for the statement in flight
// (read_timeout, 60 s) and then for the lease waits (connection_timeout,
// 30 s).
TEST_F(MysqlDeadline, CloseKeepsItsDeadlineWhenTheServerHangs) {
  Logger logger(auditpipe::mysql::open(server_->url()), running_options());
  Producers p;
  p.start(logger, 2);
  ASSERT_TRUE(testing_support::eventually([&] { return logger.stats().written > 500; }, 20s));
  server_->signal_all(SIGSTOP);
  std::this_thread::sleep_for(300ms);  // writes now hang on the server
  p.join();
  expect_close_keeps_its_deadline(logger, "MariaDB stopped (SIGSTOP)");
}

// Before cancel(), close() waited for connection_timeout (30 s): writers
// wait for a lease the openers cannot make.
TEST_F(MysqlDeadline, CloseKeepsItsDeadlineWhenTheServerIsKilled) {
  Logger logger(auditpipe::mysql::open(server_->url()), running_options());
  Producers p;
  p.start(logger, 2);
  ASSERT_TRUE(testing_support::eventually([&] { return logger.stats().written > 500; }, 20s));
  ASSERT_TRUE(server_->run("kill"));
  std::this_thread::sleep_for(300ms);
  p.join();
  expect_close_keeps_its_deadline(logger, "MariaDB killed");
}

// The first host dies; the second (the shared test server) has no such
// table and may not create it. New connections land there and fail the
// table check, which names that server.
TEST_F(MysqlDeadline, CloseKeepsItsDeadlineWhenTheFailoverHostLacksTheTable) {
  const std::string shared = testing_support::mysql_test_url();
  testing_support::MysqlProbe(auditpipe::parse_url(shared))
      .exec(std::string("DROP TABLE IF EXISTS ") + table_name);
  // The table on the first host, from a logger that may create it.
  Logger(auditpipe::mysql::open(server_->url())).close();
  Logger logger(auditpipe::mysql::open(with_hosts("mysql", server_->host() + "," + host_of(shared),
                                                  "create_table=false&connect_timeout=2")),
                running_options());
  Producers p;
  p.start(logger, 2);
  ASSERT_TRUE(testing_support::eventually([&] { return logger.stats().written > 500; }, 20s));
  ASSERT_TRUE(server_->run("kill"));
  const bool reported = testing_support::eventually(
      [&] {
        const auto s = logger.stats();
        return s.health == auditpipe::Health::down &&
               s.health_reason.find("(server " + host_of(shared) + ")") != std::string::npos;
      },
      20s);
  p.join();
  const std::string reason = logger.stats().health_reason;
  std::printf("[ close ] failover host without the table: health reason: %s\n", reason.c_str());
  EXPECT_TRUE(reported);
  EXPECT_NE(reason.find("does not exist"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("auditpipe-test"), std::string::npos) << "a password in: " << reason;
  expect_close_keeps_its_deadline(logger, "MariaDB failover host without the table");
}

TEST_F(MysqlDeadline, StartsWhileTheServerIsDownAndWritesEverythingOnceItIsUp) {
  ASSERT_TRUE(server_->run("stop"));
  testing_support::TempDir dir;
  const Options o = outage_options(dir);
  std::unique_ptr<Logger> logger;
  ASSERT_NO_THROW(logger = std::make_unique<Logger>(
                      auditpipe::mysql::open(server_->url("connect_timeout=2")), o));
  EXPECT_EQ(logger->stats().health, auditpipe::Health::down);
  constexpr long long n = 3000;  // more than the pool holds: some go to the spill directory
  ASSERT_NO_FATAL_FAILURE(log_during_outage(*logger, n));
  ASSERT_TRUE(server_->run("start"));
  expect_every_record_arrives_once(
      *logger, n, [](const std::string& expr) { return rows(server_->url(), expr); },
      "COUNT(DISTINCT source_id, seq)", "MariaDB");
}

void MysqlDeadline::seal_one_row_then_stop_the_server() {
  {
    Logger sealed(auditpipe::mysql::open(server_->url("seal=hash")));
    ASSERT_NO_FATAL_FAILURE(log_during_outage(sealed, 1));
    EXPECT_TRUE(sealed.close().drained);
  }
  ASSERT_TRUE(server_->run("stop"));
}

void MysqlDeadline::expect_the_one_row_alone(Logger& logger) {
  EXPECT_EQ(rows(server_->url()), 1);
  const auto report = logger.close(200ms);
  EXPECT_EQ(report.stats.written, 0u);
  EXPECT_EQ(report.on_disk, 10u);
}

// The refusals of open() that look at the table's rows ran only when the
// server answered at open: a logger that started while it was down, given
// a sealed table and no seal=, wrote unsealed rows into it at first contact.
// Now that contact refuses the table: health down, saying why, nothing
// written, the records kept.
TEST_F(MysqlDeadline, AStartWhileTheServerIsDownStillRefusesASealedTableAtFirstContact) {
  ASSERT_NO_FATAL_FAILURE(seal_one_row_then_stop_the_server());
  testing_support::TempDir dir;
  Logger logger(auditpipe::mysql::open(server_->url("connect_timeout=2")), outage_options(dir));
  ASSERT_NO_FATAL_FAILURE(log_during_outage(logger, 10));
  ASSERT_TRUE(server_->run("start"));
  EXPECT_TRUE(testing_support::eventually(
      [&] {
        const auto s = logger.stats();
        return s.health == auditpipe::Health::down &&
               s.health_reason.find("is sealed") != std::string::npos;
      },
      20s))
      << logger.stats().health_reason;
  expect_the_one_row_alone(logger);
}

// The same with seal= and another key than the table's seals were made
// with: the first contact refused it, but the next try wrote the records
// with seals of that key, and every later start with the right key was
// refused for the seal it had made. Every try now refuses it.
TEST_F(MysqlDeadline, AStartWhileTheServerIsDownWithAnotherSealKeyWritesNothingOnAnyTry) {
  ASSERT_NO_FATAL_FAILURE(seal_one_row_then_stop_the_server());
  testing_support::TempDir dir;
  const std::string key = (dir.path() / "other.key").string();
  {
    std::ofstream k(key);
    k << "a key the table's seals were not made with";
  }
  std::filesystem::permissions(key, std::filesystem::perms::owner_read);
  Logger logger(
      auditpipe::mysql::open(server_->url("connect_timeout=2&seal=hmac&seal_key_file=" + key)),
      outage_options(dir));
  ASSERT_NO_FATAL_FAILURE(log_during_outage(logger, 10));
  ASSERT_TRUE(server_->run("start"));
  // Refused at the first contact, and again at a later try.
  EXPECT_TRUE(testing_support::eventually(
      [&] {
        const auto s = logger.stats();
        return s.retries >= 2 && s.health == auditpipe::Health::down &&
               s.health_reason.find("does not verify with this logger's seal=hmac key") !=
                   std::string::npos;
      },
      30s))
      << logger.stats().health_reason;
  expect_the_one_row_alone(logger);
  // The table's own key (seal=hash) still opens it.
  EXPECT_NO_THROW(Logger(auditpipe::mysql::open(server_->url("seal=hash"))).close());
}

TEST(MysqlUnreachable, AWrongPasswordStillFailsTheStartAsAConfigurationError) {
  expect_a_wrong_password_fails_the_start(
      testing_support::mysql_test_url(),
      [](const std::string& url) { return auditpipe::mysql::open(url); }, "1045");
}

// A start that fails for a server down (nowhere to keep records) leaves
// nothing connecting in the background: no "retrying" warning promises
// what never comes (the pool's connects said so, and went on while the
// sink lived).
void expect_a_start_refused_unreachable_leaves_nothing_retrying(
    const std::shared_ptr<auditpipe::Sink>& sink) {
  testing_support::CapturedWarnings warnings;
  EXPECT_THROW(Logger logger(sink), auditpipe::unreachable);
  std::this_thread::sleep_for(400ms);  // the pool's first retry: 100 ms
  EXPECT_EQ(warnings.text().find("retrying"), std::string::npos) << warnings.text();
}

TEST(MysqlUnreachable, AServerDownWithNowhereToKeepRecordsFailsTheStart) {
  const std::string url = with_hosts("mysql", "127.0.0.1:" + std::to_string(free_port()), "");
  expect_a_start_refused_unreachable_leaves_nothing_retrying(auditpipe::mysql::open(url));
}

// A loopback port that takes connections (the kernel completes them from
// its backlog) and never says a word: a server stopped, hung, or not a
// database at all.
class SilentListener {
 public:
  SilentListener() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback: " << std::strerror(errno);
    }
    port_ = ntohs(a.sin_port);
  }
  ~SilentListener() { close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  unsigned port() const { return port_; }

 private:
  int fd_;
  unsigned port_ = 0;
};

// The library's own words for it were "Lost connection to server at
// 'handshake: reading initial communication packet', system error: 11".
TEST(MysqlUnreachable, AServerThatNeverAnswersIsNamedAsATimeout) {
  SilentListener silent;
  const std::string url =
      "mysql://auditpipe:auditpipe-test@127.0.0.1:" + std::to_string(silent.port()) +
      "/auditpipe_test?connect_timeout=1";
  std::string message;
  try {
    Logger logger(auditpipe::mysql::open(url));
    ADD_FAILURE() << "started against a server that never answers";
  } catch (const auditpipe::error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("no answer within connect_timeout=1 s"), std::string::npos) << message;
  EXPECT_EQ(message.find("auditpipe-test"), std::string::npos) << message;
}

// The first host is down; the second (the shared test server) has no
// table yet: it is created there, at the first connect, and rows land.
TEST(MysqlFailover, ASecondHostWithoutTheTableGetsItCreated) {
  const std::string shared = testing_support::mysql_test_url();
  testing_support::MysqlProbe probe(auditpipe::parse_url(shared));
  probe.exec(std::string("DROP TABLE IF EXISTS ") + table_name);
  const std::string url =
      with_hosts("mysql", "127.0.0.1:" + std::to_string(free_port()) + "," + host_of(shared), "");
  Logger logger(auditpipe::mysql::open(url), running_options());
  constexpr long long n = 1000;
  for (long long i = 0; i < n; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
  EXPECT_TRUE(logger.close(30s).drained);
  EXPECT_EQ(probe.scalar(std::string("SELECT COUNT(*) FROM ") + table_name), n);
  probe.exec(std::string("DROP TABLE IF EXISTS ") + table_name);
}

// A PostgreSQL server of this binary's own.
class PostgresqlDeadline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ThrowawayServer(ThrowawayServer::Kind::postgres);
    ASSERT_TRUE(server_->run("start"));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(server_->run("start"));
    testing_support::PostgresqlProbe(auditpipe::parse_url(server_->url()))
        .exec(std::string("DROP TABLE IF EXISTS ") + table_name);
  }
  void TearDown() override { server_->signal_all(SIGCONT); }

  static long long rows(const std::string& what = "COUNT(*)") {
    testing_support::PostgresqlProbe probe(auditpipe::parse_url(server_->url()));
    return probe.scalar("SELECT " + what + " FROM " + table_name);
  }

  static ThrowawayServer* server_;
};
ThrowawayServer* PostgresqlDeadline::server_ = nullptr;

// Before cancel(), close() waited for the statement in flight (libpq has
// no statement timeout of its own: as long as the server stays stopped)
// and for the lease waits (connection_timeout, 30 s).
TEST_F(PostgresqlDeadline, CloseKeepsItsDeadlineWhenTheServerHangs) {
  Logger logger(auditpipe::postgresql::open(server_->url()), running_options());
  Producers p;
  p.start(logger, 2);
  ASSERT_TRUE(testing_support::eventually([&] { return logger.stats().written > 500; }, 20s));
  server_->signal_all(SIGSTOP);
  std::this_thread::sleep_for(300ms);
  p.join();
  expect_close_keeps_its_deadline(logger, "PostgreSQL stopped (SIGSTOP)");
}

TEST_F(PostgresqlDeadline, StartsWhileTheServerIsDownAndWritesEverythingOnceItIsUp) {
  ASSERT_TRUE(server_->run("stop"));
  testing_support::TempDir dir;
  const Options o = outage_options(dir);
  std::unique_ptr<Logger> logger;
  ASSERT_NO_THROW(logger = std::make_unique<Logger>(
                      auditpipe::postgresql::open(server_->url("connect_timeout=2")), o));
  EXPECT_EQ(logger->stats().health, auditpipe::Health::down);
  constexpr long long n = 3000;
  ASSERT_NO_FATAL_FAILURE(log_during_outage(*logger, n));
  ASSERT_TRUE(server_->run("start"));
  expect_every_record_arrives_once(
      *logger, n, [](const std::string& expr) { return rows(expr); },
      "COUNT(DISTINCT (source_id, seq))", "PostgreSQL");
}

TEST(PostgresqlUnreachable, AWrongPasswordStillFailsTheStartAsAConfigurationError) {
  expect_a_wrong_password_fails_the_start(
      testing_support::postgresql_test_url(),
      [](const std::string& url) { return auditpipe::postgresql::open(url); },
      "password authentication failed");
}

TEST(PostgresqlUnreachable, AServerDownWithNowhereToKeepRecordsFailsTheStart) {
  const std::string url = with_hosts("postgresql", "127.0.0.1:" + std::to_string(free_port()), "");
  expect_a_start_refused_unreachable_leaves_nothing_retrying(auditpipe::postgresql::open(url));
}

TEST(PostgresqlFailover, ASecondHostWithoutTheTableGetsItCreated) {
  const std::string shared = testing_support::postgresql_test_url();
  testing_support::PostgresqlProbe probe(auditpipe::parse_url(shared));
  probe.exec(std::string("DROP TABLE IF EXISTS ") + table_name);
  const std::string url = with_hosts(
      "postgresql", "127.0.0.1:" + std::to_string(free_port()) + "," + host_of(shared), "");
  Logger logger(auditpipe::postgresql::open(url), running_options());
  constexpr long long n = 1000;
  for (long long i = 0; i < n; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
  }
  EXPECT_TRUE(logger.close(30s).drained);
  EXPECT_EQ(probe.scalar(std::string("SELECT COUNT(*) FROM ") + table_name), n);
  probe.exec(std::string("DROP TABLE IF EXISTS ") + table_name);
}

}  // namespace
