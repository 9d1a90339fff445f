// SealWriter (sinks/sql/src/seal_writer.h) from inside, on a real SQLite
// file, through a connection that loses the answer to a seal's insert
// after the insert was stored: what a server crash between its commit and
// its reply leaves the writer knowing.
#include "seal_writer.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "auditpipe/status.h"
#include "captured_warnings.h"
#include "sqlite_connection.h"
#include "sqlite_dialect.h"
#include "temp_dir.h"

namespace {

using testing_support::AuditRow;
using testing_support::TempDir;

// Forwards everything to a real connection; the first `lose` seal inserts
// are stored and then reported as failed, as a reply lost on the way.
class AnswerLost final : public auditpipe::SqlConnection {
 public:
  AnswerLost(auditpipe::SqlConnection& real, int lose) : real_(real), lose_(lose) {}
  bool ping() noexcept override { return true; }
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override {
    return real_.catalog_rows(query, table);
  }
  void execute_ddl(const std::string& sql) override { real_.execute_ddl(sql); }
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params) override {
    auto rows = real_.query_rows(sql, params);
    if (lose_ > 0 && sql.starts_with("INSERT INTO") &&
        sql.find("_seals") != std::string_view::npos) {
      --lose_;
      throw auditpipe::error("lost connection to the server during the reply (test)");
    }
    return rows;
  }
  std::string server() const override { return real_.server(); }
  void cancel_io() noexcept override {}

 private:
  auditpipe::SqlConnection& real_;
  int lose_;
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
  AnswerLost lossy(*real, 1);
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

}  // namespace
