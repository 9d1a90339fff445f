// Faults on the throwaway PostgreSQL server that the MariaDB fault tests
// (fault_test.cpp) also make there: the application killed -9 with a
// durable pool, with sealing on; a spill replay's batch whose seal is held.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "auditpipe/postgresql/postgresql_sink.h"
#include "killed_durable_child.h"
#include "postgresql_probe.h"
#include "replayed_batch_check.h"
#include "temp_dir.h"

namespace {

using testing_support::KilledRun;
using testing_support::postgresql_test_url;
using testing_support::PostgresqlProbe;
using testing_support::TempDir;

std::string sealed_url(const std::string& key) {
  const std::string base = postgresql_test_url();
  return base + (base.find('?') == std::string::npos ? "?" : "&") +
         "seal=hmac&seal_key_file=" + key;
}

// Sealing with a durable pool: the application killed while its writers
// store rows but its seals cannot be stored (the seals table locked by a
// transaction of the test's). Each record's slot stays committed until
// its batch's seal is stored, so the next start writes it again (skipped
// by key) and seals it, and `auditpipe verify` finds the table clean:
// nothing reported committed is missing, nothing is left unsealed.
// Drops audit_log, its seals and the finds kept of it; returns a seal key
// file in `dir` holding `key` (readable by its owner only, as the sink requires).
std::string fresh_sealed_table(const TempDir& dir, const char* key) {
  {
    PostgresqlProbe probe;
    probe.exec("DROP TABLE IF EXISTS audit_log");
    probe.exec("DROP TABLE IF EXISTS audit_log_seals");
    probe.exec("DROP TABLE IF EXISTS audit_log_unsealed");
  }
  const std::string path = (dir.path() / "seal.key").string();
  {
    std::ofstream k(path);
    k << key;
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);
  return path;
}

void kill_with_seals_held(const std::string& lock, testing_support::LockAt at) {
  TempDir dir;
  const std::string key = fresh_sealed_table(dir, "postgresql durable seal key");
  const std::string url = sealed_url(key);
  const std::string pool_file = (dir.path() / "pool.dat").string();
  { auditpipe::Logger<testing_support::AuditRow> create_tables(auditpipe::postgresql::open(url)); }
  const KilledRun run = testing_support::kill_durable_child<PostgresqlProbe>(
      url, pool_file, lock, "ROLLBACK",
      [](const std::string& u) { return auditpipe::postgresql::open(u); }, at,
      // (The tests on the server run one at a time: the only other client
      // sessions on the test database are the killed child's. An
      // autovacuum worker may be there too, which only a superuser may end.)
      [](PostgresqlProbe& p) {
        p.rows(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
            "current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND usename = current_user");
      });
  testing_support::expect_resealed(run);
  EXPECT_EQ(PostgresqlProbe().scalar("SELECT COUNT(*) FROM audit_log"),
            PostgresqlProbe().scalar(
                "SELECT COUNT(*) FROM (SELECT DISTINCT source_id, seq FROM audit_log) k"));
  const std::string verify = std::string(AUDITPIPE_CLI) + " verify --quiet '" +
                             postgresql_test_url() + "' --table audit_log --key-file " + key;
  const int status = std::system(verify.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << verify;
}

TEST(PostgresqlFault, TheApplicationKilledBeforeItsSealsWereStoredLeavesNothingUnsealed) {
  kill_with_seals_held("BEGIN; LOCK TABLE audit_log_seals IN ACCESS EXCLUSIVE MODE",
                       testing_support::LockAt::half_a_second_in);
}

// The same, killed before its first seal was stored (SHARE mode: the seals
// table readable, not writable, from before it starts): the restart finds
// rows and no seal, all of them in its pool, and seals them without a warning.
TEST(PostgresqlFault, TheApplicationKilledBeforeItsFirstSealLeavesNothingUnsealed) {
  kill_with_seals_held("BEGIN; LOCK TABLE audit_log_seals IN SHARE MODE",
                       testing_support::LockAt::start);
  EXPECT_GT(PostgresqlProbe().scalar("SELECT COUNT(*) FROM audit_log_seals"), 0);
}

// Sealing, a replayed batch whose seal is not stored yet
// (tests/support/replayed_batch_check.h).
TEST(PostgresqlFault, ReplayedRowsWaitingForTheirSealAreNotYetSealedNotInserted) {
  TempDir dir;
  const std::string key = fresh_sealed_table(dir, "postgresql replay noted keys");
  testing_support::ReplayHold hold;
  hold.hold_rows = {
      "CREATE OR REPLACE FUNCTION hold_rows() RETURNS trigger AS $$ BEGIN IF EXISTS (SELECT 1 "
      "FROM replay_gate WHERE NEW.message_id BETWEEN lo AND hi) THEN RAISE EXCEPTION 'held by "
      "the test' USING ERRCODE = '40001'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
      "CREATE TRIGGER hold_rows BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION "
      "hold_rows()"};
  hold.release_rows = "DROP TRIGGER IF EXISTS hold_rows ON audit_log";
  hold.hold_seals = {
      "CREATE OR REPLACE FUNCTION hold_seals() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION "
      "'seals held by the test'; END $$ LANGUAGE plpgsql",
      "CREATE TRIGGER hold_seals BEFORE INSERT ON audit_log_seals FOR EACH ROW EXECUTE "
      "FUNCTION hold_seals()"};
  hold.release_seals = "DROP TRIGGER hold_seals ON audit_log_seals";
  testing_support::check_replayed_batch_held<PostgresqlProbe>(
      sealed_url(key), postgresql_test_url(), key, dir, hold,
      [](const std::string& u) { return auditpipe::postgresql::open(u); });
}

}  // namespace

// A start reads the newest seal's rows back to check its key against the
// table's. A connection that dies during that read is an outage: the
// start fails (and a later one checks again), where it used to pass the
// check and seal rows with another key, breaking the chain for good. The
// test's row-level policy ends the session that reads the rows back (its
// query is the read-back's) until the policy is dropped.
TEST(PostgresqlFault, AStartWhoseReadBackOfTheNewestSealDiesDoesNotSealWithAnotherKey) {
  TempDir dir;
  const std::string key = fresh_sealed_table(dir, "the key the table is sealed with");
  {
    auditpipe::Logger<testing_support::AuditRow> logger(
        auditpipe::postgresql::open(sealed_url(key)));
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = 1;
    ASSERT_EQ(r.commit(), auditpipe::Status::ok);
    ASSERT_TRUE(logger.close(std::chrono::seconds(30)).drained);
  }
  const std::string other = (dir.path() / "other.key").string();
  {
    std::ofstream k(other);
    k << "a key the table's seals were not made with";
  }
  std::filesystem::permissions(other, std::filesystem::perms::owner_read);
  PostgresqlProbe probe;
  probe.exec(
      "CREATE OR REPLACE FUNCTION end_read_back() RETURNS boolean AS $$ BEGIN IF current_query() "
      "LIKE '%AND seq <= % ORDER BY seq%' THEN PERFORM "
      "pg_terminate_backend(pg_backend_pid()); END IF; RETURN true; END $$ LANGUAGE plpgsql");
  probe.exec("ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY");
  probe.exec("ALTER TABLE audit_log FORCE ROW LEVEL SECURITY");
  probe.exec("CREATE POLICY end_read_back ON audit_log USING (end_read_back())");
  try {
    auditpipe::Logger<testing_support::AuditRow> logger(
        auditpipe::postgresql::open(sealed_url(other)));
    auto r = logger.acquire();
    if (r) {
      r->message_id = 2;
      (void)r.commit();
    }
    logger.close(std::chrono::seconds(10));
    ADD_FAILURE() << "opened with another key while the newest seal could not be read back";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "was lost while reading back the rows of the newest seal of audit_log"),
              std::string::npos)
        << e.what();
  }
  // The same with the connection alive (a statement timeout, a lock, a
  // cancel): the check was not made, so the start fails all the same.
  probe.exec(
      "CREATE OR REPLACE FUNCTION end_read_back() RETURNS boolean AS $$ BEGIN IF current_query() "
      "LIKE '%AND seq <= % ORDER BY seq%' THEN RAISE EXCEPTION 'read back refused by the test'; "
      "END IF; RETURN true; END $$ LANGUAGE plpgsql");
  try {
    auditpipe::Logger<testing_support::AuditRow> logger(
        auditpipe::postgresql::open(sealed_url(other)));
    ADD_FAILURE() << "opened with another key while the newest seal could not be read back";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(
        std::string(e.what()).find("could not read back the rows of the newest seal of audit_log"),
        std::string::npos)
        << e.what();
  }
  probe.exec("DROP POLICY end_read_back ON audit_log");
  probe.exec("ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY");
  probe.exec("ALTER TABLE audit_log DISABLE ROW LEVEL SECURITY");
  probe.exec("DROP FUNCTION end_read_back()");
  EXPECT_EQ(probe.scalar("SELECT COUNT(*) FROM audit_log"), 1);
  // Read back now, the rows show the key is not the table's.
  try {
    auditpipe::Logger<testing_support::AuditRow> logger(
        auditpipe::postgresql::open(sealed_url(other)));
    ADD_FAILURE() << "opened with another key";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("does not verify with this logger's seal=hmac key"),
              std::string::npos)
        << e.what();
  }
}
