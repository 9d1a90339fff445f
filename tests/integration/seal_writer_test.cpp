// SealWriter (sinks/sql/src/seal_writer.h) from inside, on a real SQLite
// file, through a connection that loses the answer to a seal's insert
// after the insert was stored (what a server crash between its commit and
// its reply leaves the writer knowing), or that counts the seal inserts;
// and the digest threads it keeps for the writers (digest_thread.h).
#include "seal_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "auditpipe/status.h"
#include "captured_warnings.h"
#include "digest_thread.h"
#include "eventually.h"
#include "sqlite_connection.h"
#include "sqlite_dialect.h"
#include "temp_dir.h"

namespace {

using testing_support::AuditRow;
using testing_support::TempDir;

// Forwards everything to a real connection and counts the seal inserts
// that reach the database. While `down`, a seal insert fails before it
// reaches it; the next `lose` are stored and then reported as failed, as a
// reply lost on the way.
class SealInserts final : public auditpipe::SqlConnection {
 public:
  explicit SealInserts(auditpipe::SqlConnection& real, int lose_replies = 0)
      : lose(lose_replies), real_(real) {}
  bool ping() noexcept override { return true; }
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override {
    return real_.catalog_rows(query, table);
  }
  void execute_ddl(const std::string& sql) override { real_.execute_ddl(sql); }
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params) override {
    const bool seal_insert =
        sql.starts_with("INSERT INTO") && sql.find("_seals") != std::string_view::npos;
    if (seal_insert && down) throw auditpipe::error("the server is down (test)");
    auto rows = real_.query_rows(sql, params);
    if (seal_insert) {
      ++stored;
      if (lose > 0) {
        --lose;
        throw auditpipe::error("lost connection to the server during the reply (test)");
      }
    }
    return rows;
  }
  std::string server() const override { return real_.server(); }
  void cancel_io() noexcept override {}

  int lose;
  bool down = false;
  int stored = 0;  ///< seal inserts that reached the database

 private:
  auditpipe::SqlConnection& real_;
};

long long scalar(auditpipe::SqlConnection& c, const std::string& sql) {
  const auto rows = c.query_rows(sql, {});
  return rows.empty() || !rows[0][0] ? -1 : std::stoll(*rows[0][0]);
}

// The insert was stored, its answer lost: the retry at the same place in the
// chain repeats the same digest, which the insert skips and the read-back
// finds, so the batch is sealed once. (It used to be tried with a new
// sealed_at, hence another digest: the stored one was then taken for
// another process's seal and the batch sealed again under the next number.)
TEST(SealWriter, ASealWhoseAnswerWasLostIsStoredOnce) {
  TempDir dir;
  const std::string path = (dir.path() / "seals.db").string();
  // The data table, as the sink makes it.
  { auditpipe::Logger<AuditRow> create(auditpipe::sqlite::open("sqlite://" + path)); }
  auditpipe::sqlite::SqliteConfig config;
  config.path = path;
  const auto real =
      auditpipe::sqlite::open_connection(config, auditpipe::sqlite::Threading::caller_serializes);
  auditpipe::seal::SealSettings settings;
  settings.mode = auditpipe::seal::Mode::hash;
  auditpipe::SealWriter writer(auditpipe::sqlite::sqlite_dialect, settings,
                               auditpipe::descriptor_of<AuditRow>(), "in '" + path + "'");
  writer.prepare(*real, true);
  testing_support::CapturedWarnings said(spdlog::level::info);
  SealInserts lossy(*real, 1);
  auditpipe::SealWriter::BatchSeal batch;
  batch.ranges = "7:0-9";
  batch.row_count = 10;
  batch.rows_digest = std::string(64, 'a');
  batch.row_hashes = std::string(80, '0');
  const std::uint64_t ticket = writer.seal(lossy, batch);
  EXPECT_EQ(scalar(*real, "SELECT COUNT(*) FROM audit_log_seals"), 1);
  EXPECT_EQ(writer.stats().pending, 1u);  // the writer does not know it was stored
  EXPECT_EQ(writer.stored_by(*real, ticket), std::nullopt);
  EXPECT_EQ(scalar(*real, "SELECT COUNT(*) FROM audit_log_seals"), 1);
  EXPECT_EQ(scalar(*real, "SELECT MAX(seal_no) FROM audit_log_seals"), 1);
  EXPECT_EQ(writer.stats().pending, 0u);
  EXPECT_EQ(said.text().find("another process"), std::string::npos) << said.text();
  // The next seal continues the chain from it.
  batch.ranges = "7:10-19";
  EXPECT_EQ(writer.stored_by(*real, writer.seal(*real, batch)), std::nullopt);
  EXPECT_EQ(scalar(*real, "SELECT COUNT(*) FROM audit_log_seals"), 2);
  EXPECT_EQ(scalar(*real, "SELECT COUNT(*) FROM audit_log_seals WHERE ranges = '7:0-9'"), 1);
  writer.close(real.get());
}

struct SealsFile {
  TempDir dir;
  std::string path = (dir.path() / "seals.db").string();
  std::unique_ptr<auditpipe::SqlConnection> real;
  std::optional<auditpipe::SealWriter> writer;

  // `prepared`: the writer's start checks have run on `real`.
  explicit SealsFile(bool prepared = true) {
    { auditpipe::Logger<AuditRow> create(auditpipe::sqlite::open("sqlite://" + path)); }
    auditpipe::sqlite::SqliteConfig config;
    config.path = path;
    real =
        auditpipe::sqlite::open_connection(config, auditpipe::sqlite::Threading::caller_serializes);
    auditpipe::seal::SealSettings settings;
    settings.mode = auditpipe::seal::Mode::hash;
    writer.emplace(auditpipe::sqlite::sqlite_dialect, settings,
                   auditpipe::descriptor_of<AuditRow>(), "in '" + path + "'");
    if (prepared) writer->prepare(*real, true);
  }
  static auditpipe::SealWriter::BatchSeal batch(int i) {
    auditpipe::SealWriter::BatchSeal b;
    b.ranges = "7:" + std::to_string(10 * i) + "-" + std::to_string(10 * i + 9);
    b.row_count = 10;
    b.rows_digest = std::string(64, static_cast<char>('a' + i));
    b.row_hashes = std::string(80, '0');
    return b;
  }
  // Whether each seal's prev_digest is the digest of the one before it.
  bool chained() {
    return scalar(*real,
                  "SELECT COUNT(*) FROM audit_log_seals s JOIN audit_log_seals p ON p.seal_no = "
                  "s.seal_no - 1 WHERE s.prev_digest = p.digest") ==
           scalar(*real, "SELECT COUNT(*) FROM audit_log_seals") - 1;
  }
};

// Seals that gathered (an outage held them) are stored in one statement,
// linked in order, and the ones queued after continue the chain.
TEST(SealWriter, SealsPendingTogetherAreStoredInOneStatement) {
  SealsFile f;
  SealInserts c(*f.real);
  c.down = true;
  std::uint64_t ticket = 0;
  {
    testing_support::CapturedWarnings quiet;  // each failed try warns
    for (int i = 0; i < 5; ++i) ticket = f.writer->seal(c, SealsFile::batch(i));
  }
  EXPECT_EQ(f.writer->stats().pending, 5u);
  EXPECT_EQ(scalar(*f.real, "SELECT COUNT(*) FROM audit_log_seals"), 0);
  c.down = false;
  EXPECT_EQ(f.writer->stored_by(c, ticket), std::nullopt);
  EXPECT_EQ(c.stored, 1);
  EXPECT_EQ(f.writer->stats().pending, 0u);
  EXPECT_EQ(scalar(*f.real, "SELECT COUNT(*) FROM audit_log_seals"), 5);
  EXPECT_EQ(scalar(*f.real, "SELECT MAX(seal_no) FROM audit_log_seals"), 5);
  EXPECT_EQ(scalar(*f.real,
                   "SELECT COUNT(*) FROM audit_log_seals WHERE ranges = '7:0-9' AND "
                   "seal_no = 1"),
            1);
  EXPECT_EQ(scalar(*f.real,
                   "SELECT COUNT(*) FROM audit_log_seals WHERE ranges = '7:40-49' AND "
                   "seal_no = 5"),
            1);
  EXPECT_TRUE(f.chained());
  EXPECT_EQ(f.writer->stored_by(c, f.writer->seal(c, SealsFile::batch(5))), std::nullopt);
  EXPECT_EQ(c.stored, 2);
  EXPECT_EQ(scalar(*f.real, "SELECT COUNT(*) FROM audit_log_seals"), 6);
  EXPECT_TRUE(f.chained());
  f.writer->close(f.real.get());
}

// A group stored whose answer was lost: each of its seals is found by the
// one-at-a-time retry (same digests), none stored twice.
TEST(SealWriter, AGroupWhoseAnswerWasLostIsStoredOnce) {
  SealsFile f;
  SealInserts c(*f.real);
  c.down = true;
  std::uint64_t ticket = 0;
  {
    testing_support::CapturedWarnings quiet;
    for (int i = 0; i < 3; ++i) ticket = f.writer->seal(c, SealsFile::batch(i));
  }
  testing_support::CapturedWarnings said(spdlog::level::info);
  SealInserts lossy(*f.real, 1);
  EXPECT_EQ(f.writer->stored_by(lossy, ticket), std::nullopt);
  EXPECT_EQ(f.writer->stats().pending, 0u);
  EXPECT_EQ(scalar(*f.real, "SELECT COUNT(*) FROM audit_log_seals"), 3);
  EXPECT_EQ(scalar(*f.real, "SELECT MAX(seal_no) FROM audit_log_seals"), 3);
  EXPECT_EQ(scalar(*f.real, "SELECT COUNT(DISTINCT ranges) FROM audit_log_seals"), 3);
  EXPECT_TRUE(f.chained());
  EXPECT_EQ(said.text().find("another process"), std::string::npos) << said.text();
  f.writer->close(f.real.get());
}

// The info line of the chain's newest seal comes at each thousandth seal
// and at close: once when the two are the same seal (it came twice).
TEST(SealWriter, TheNewestSealIsToldOnceWhenTheThousandthIsTheLast) {
  SealsFile f;
  testing_support::CapturedWarnings told(spdlog::level::info);
  std::uint64_t ticket = 0;
  for (int i = 0; i < 1000; ++i) ticket = f.writer->seal(*f.real, SealsFile::batch(i));
  EXPECT_EQ(f.writer->stored_by(*f.real, ticket), std::nullopt);
  f.writer->close(f.real.get());
  const std::string text = told.text();
  const std::string line = "sealed through seal 1000 ";
  std::size_t count = 0;
  for (std::size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << text;
}

// This process's threads now (/proc/self/task). A thread joined may still
// be listed for a moment (join returns before the kernel removes it), so
// counts are awaited (threads_become()).
std::size_t threads_now() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

bool threads_become(std::size_t n) {
  return testing_support::eventually([n] { return threads_now() == n; });
}

// Forwards to a real connection until a statement holding `at` comes: that
// one fails as a connection lost under it would, and so does every ping and
// statement after.
class LostAt final : public auditpipe::SqlConnection {
 public:
  LostAt(auditpipe::SqlConnection& real, std::string at) : real_(real), at_(std::move(at)) {}
  bool ping() noexcept override { return !lost_; }
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override {
    fail_if_lost(query);
    return real_.catalog_rows(query, table);
  }
  void execute_ddl(const std::string& sql) override {
    fail_if_lost(sql);
    real_.execute_ddl(sql);
  }
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params) override {
    fail_if_lost(sql);
    return real_.query_rows(sql, params);
  }
  std::string server() const override { return real_.server(); }
  void cancel_io() noexcept override {}

 private:
  void fail_if_lost(std::string_view sql) {
    if (sql.find(at_) != std::string_view::npos) lost_ = true;
    if (lost_) throw auditpipe::error("lost connection to the server (test)");
  }
  auditpipe::SqlConnection& real_;
  std::string at_;
  bool lost_ = false;
};

// A start's checks name a cause (a missing grant, a seals table without its
// columns) only while the connection is there: one lost under a check is
// reported as what it is, and the start's retries say so.
TEST(SealWriter, AConnectionLostUnderAStartsCheckIsNotTakenForAGrantOrAColumn) {
  for (const std::string at :
       {"pragma_table_info", "WHERE 1 = 0", "CREATE TABLE", "ORDER BY seal_no DESC"}) {
    SealsFile f(false);
    LostAt lost(*f.real, at);
    try {
      f.writer->prepare(lost, true);
      ADD_FAILURE() << "prepared over a connection lost at " << at;
    } catch (const auditpipe::error& e) {
      const std::string said = e.what();
      EXPECT_NE(said.find("the connection was lost while the start checked it"), std::string::npos)
          << "lost at " << at << ": " << said;
      EXPECT_NE(said.find("lost connection to the server (test)"), std::string::npos) << said;
      EXPECT_EQ(said.find("grant"), std::string::npos) << said;
      EXPECT_EQ(said.find("lacks columns"), std::string::npos) << said;
      EXPECT_EQ(said.find("not exactly the record's"), std::string::npos) << said;
    }
  }
}

// A batch digested on a kept thread gives the seal digest() gives on the
// writer's own; the thread is kept for the next batch (one per writer
// digesting at once, not one per batch), and stop_storer() (the sink's
// close()) ends the kept ones.
TEST(SealWriter, ADigestThreadIsKeptFromBatchToBatchAndEndsAtClose) {
  SealsFile f;
  const auto& d = auditpipe::descriptor_of<AuditRow>();
  std::vector<AuditRow> rows(300);
  std::vector<auditpipe::RecordRef> refs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].message_id = static_cast<std::int64_t>(i);
    rows[i].sender = "sender " + std::to_string(i);
    refs.push_back({7, static_cast<std::int64_t>(i), reinterpret_cast<const std::byte*>(&rows[i])});
  }
  const auditpipe::Batch batch{d, refs};
  const auditpipe::SealWriter::BatchSeal expected = f.writer->digest(batch);
  ASSERT_EQ(expected.row_count, 300);
  // Threads an earlier test ended are gone first.
  std::size_t before = threads_now();
  testing_support::eventually([&] {
    const std::size_t now = threads_now();
    return std::exchange(before, now) == now;
  });
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<auditpipe::DigestThread> t = f.writer->take_digest_thread();
    ASSERT_NE(t, nullptr);
    t->begin(batch);
    const auditpipe::SealWriter::BatchSeal got = t->finish();
    EXPECT_EQ(got.ranges, expected.ranges);
    EXPECT_EQ(got.row_count, expected.row_count);
    EXPECT_EQ(got.rows_digest, expected.rows_digest);
    EXPECT_EQ(got.row_hashes, expected.row_hashes);
    f.writer->give_back(std::move(t));
    EXPECT_TRUE(threads_become(before + 1)) << "batch " << i << ": " << threads_now();
  }
  // Two writers digesting at once get a thread each; a batch begun and
  // then only waited for (its statement threw) leaves its thread reusable.
  std::unique_ptr<auditpipe::DigestThread> a = f.writer->take_digest_thread();
  std::unique_ptr<auditpipe::DigestThread> b = f.writer->take_digest_thread();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(threads_become(before + 2)) << threads_now();
  a->begin(batch);
  b->begin(batch);
  a->wait();
  EXPECT_EQ(b->finish().rows_digest, expected.rows_digest);
  a->begin(batch);
  EXPECT_EQ(a->finish().row_hashes, expected.row_hashes);
  f.writer->give_back(std::move(a));
  f.writer->give_back(std::move(b));
  EXPECT_TRUE(threads_become(before + 2)) << threads_now();
  f.writer->stop_storer();
  EXPECT_TRUE(threads_become(before)) << threads_now();
}

}  // namespace

// The writer's count of a seal's keys and verify's coverage both rest on
// this: a batch sealed twice, or split, gives runs that overlap or touch.
TEST(SealRuns, MergeJoinsRunsThatOverlapOrTouchAndCountsTheirSeqs) {
  using auditpipe::seal::SeqRun;
  std::vector<SeqRun> runs{{10, 12}, {0, 3}, {4, 4}, {11, 20}, {30, 30}, {2, 3}};
  EXPECT_EQ(auditpipe::seal::merge_runs(runs), 5 + 11 + 1);
  EXPECT_EQ(runs, (std::vector<SeqRun>{{0, 4}, {10, 20}, {30, 30}}));
  std::vector<SeqRun> none;
  EXPECT_EQ(auditpipe::seal::merge_runs(none), 0);
  EXPECT_TRUE(none.empty());
}

// The same at int64's ends, where a caller's keys may be: runs there join
// and count without `hi + 1` overflowing, and a forged run over every key
// counts as INT64_MAX keys, not a wrapped number.
TEST(SealRuns, RunsAtTheEndsOfInt64JoinAndCountWithoutOverflow) {
  using auditpipe::seal::SeqRun;
  constexpr std::int64_t min = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::vector<SeqRun> runs{{max, max}, {min + 1, min + 1}, {max - 1, max - 1}, {min, min}};
  EXPECT_EQ(auditpipe::seal::merge_runs(runs), 4);
  EXPECT_EQ(runs, (std::vector<SeqRun>{{min, min + 1}, {max - 1, max}}));
  std::vector<SeqRun> apart{{max, max}, {min, min}};
  EXPECT_EQ(auditpipe::seal::merge_runs(apart), 2);
  EXPECT_EQ(apart.size(), 2u);
  std::vector<SeqRun> forged{{min, -1}, {0, max}, {5, 6}};
  EXPECT_EQ(auditpipe::seal::merge_runs(forged), max);
  EXPECT_EQ(forged, (std::vector<SeqRun>{{min, max}}));
  EXPECT_EQ(auditpipe::seal::run_keys(min, max), max);
  EXPECT_EQ(auditpipe::seal::run_keys(max, max), 1);
  EXPECT_TRUE(auditpipe::seal::follows(max - 1, max));
  EXPECT_FALSE(auditpipe::seal::follows(max, min));  // no wrapping round
  EXPECT_FALSE(auditpipe::seal::joins(min, max));
}

// Which of a source's seals, newest first, a start looks below for a
// crashed run's rows and verify calls "not yet sealed" below (seal.h).
TEST(SealTailWindow, EndsAtTheChainsDepthAtTheKeyCapOrAtSeqsFarBelow) {
  using auditpipe::seal::SeqRun;
  using auditpipe::seal::tail_chain_seals;
  using auditpipe::seal::tail_keys_max;
  using auditpipe::seal::TailWindow;
  {
    // Small batches: every seal down to the chain's depth.
    TailWindow w;
    std::int64_t taken = 0;
    for (std::int64_t depth = 1; depth <= 400; ++depth) {
      const std::int64_t hi = 10'000 - depth * 7;
      taken += w.extends({{hi - 6, hi}}, depth);
    }
    EXPECT_EQ(taken, tail_chain_seals);
  }
  {
    // Big batches: up to the key cap, and none after, however small.
    TailWindow w;
    std::int64_t taken = 0;
    std::int64_t hi = std::int64_t{1} << 40;
    for (std::int64_t depth = 1; depth <= 20; ++depth, hi -= 1000) {
      taken += w.extends({{hi - 999, hi}}, depth);
    }
    EXPECT_EQ(taken, tail_keys_max / 1000);
    EXPECT_FALSE(w.extends({{0, 0}}, 21));
  }
  {
    // A seal of old seqs (a spill replayed late) ends it: the window does
    // not reach down to them.
    TailWindow w;
    EXPECT_TRUE(w.extends({{1'000'000, 1'000'009}}, 1));
    EXPECT_TRUE(w.extends({{999'990, 999'999}}, 2));
    EXPECT_FALSE(w.extends({{5, 9}}, 3));
    EXPECT_FALSE(w.extends({{999'980, 999'989}}, 4));
  }
  {
    // A forged run over every key counts past the caps, without overflow.
    TailWindow w;
    EXPECT_FALSE(w.extends({{INT64_MIN, INT64_MAX}}, 1));
    TailWindow v;
    EXPECT_FALSE(v.extends({{INT64_MAX - 1, INT64_MAX}, {INT64_MIN, INT64_MIN}}, 1));
  }
}
