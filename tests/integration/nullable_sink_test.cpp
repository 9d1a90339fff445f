// Nullable columns on real databases: a record with a nullable member of
// every column type, some NULL, some zero or empty, some ordinary, through
// every sink and write path (a SQLite file; the throwaway MariaDB's bulk,
// text and LOAD DATA paths; the throwaway PostgreSQL's binary COPY, text
// COPY and INSERT), read back through each database's own C API with IS
// NULL told apart from '' and 0. Then the start-up table check's schema
// changes on each database: a missing column printed as the ALTER TABLE
// that adds it, migrate=add_columns running it, an extra NOT NULL column
// without a default refused, a NOT NULL column for a nullable member
// refused.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/logger.h"
#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/postgresql/postgresql_sink.h"
#include "auditpipe/sqlite/sqlite_sink.h"
#include "mysql_probe.h"
#include "null_row.h"
#include "postgresql_probe.h"
#include "temp_dir.h"

namespace nulls {

using auditpipe::nullable;
using testing_support::NullRow;

// The table as an older record knew it: two of NullRow's columns.
struct OldRow {
  std::int64_t message_id = 0;
  nullable<auditpipe::timestamp> at;
};
constexpr auto describe(auditpipe::type_tag<OldRow>) {
  return auditpipe::table<OldRow>("audit_nulls", AUDITPIPE_COLUMN(OldRow, message_id),
                                  AUDITPIPE_COLUMN(OldRow, at));
}

// OldRow and a NOT NULL column NullRow does not have.
struct OldRequiredRow {
  std::int64_t message_id = 0;
  nullable<auditpipe::timestamp> at;
  std::int32_t required_x = 0;
};
constexpr auto describe(auditpipe::type_tag<OldRequiredRow>) {
  return auditpipe::table<OldRequiredRow>(
      "audit_nulls", AUDITPIPE_COLUMN(OldRequiredRow, message_id),
      AUDITPIPE_COLUMN(OldRequiredRow, at), AUDITPIPE_COLUMN(OldRequiredRow, required_x));
}

// NullRow's columns and two more: one NOT NULL (a plain member), one
// nullable. Its table has an extra NOT NULL column for a NullRow.
struct WiderRow {
  std::int64_t message_id = 0;
  nullable<auditpipe::timestamp> at;
  nullable<std::int8_t> i8;
  nullable<std::int16_t> i16;
  nullable<std::int32_t> i32;
  nullable<std::int64_t> i64;
  nullable<std::uint8_t> u8;
  nullable<std::uint16_t> u16;
  nullable<std::uint32_t> u32;
  nullable<bool> flag;
  nullable<double> amount;
  nullable<auditpipe::fixed_string<16>> note;
  nullable<auditpipe::fixed_string<64>> detail;
  std::int32_t required_x = 0;
  nullable<std::int32_t> optional_x;
};
constexpr auto describe(auditpipe::type_tag<WiderRow>) {
  return auditpipe::table<WiderRow>(
      "audit_nulls", AUDITPIPE_COLUMN(WiderRow, message_id), AUDITPIPE_COLUMN(WiderRow, at),
      AUDITPIPE_COLUMN(WiderRow, i8), AUDITPIPE_COLUMN(WiderRow, i16),
      AUDITPIPE_COLUMN(WiderRow, i32), AUDITPIPE_COLUMN(WiderRow, i64),
      AUDITPIPE_COLUMN(WiderRow, u8), AUDITPIPE_COLUMN(WiderRow, u16),
      AUDITPIPE_COLUMN(WiderRow, u32), AUDITPIPE_COLUMN(WiderRow, flag),
      AUDITPIPE_COLUMN(WiderRow, amount), AUDITPIPE_COLUMN(WiderRow, note),
      AUDITPIPE_COLUMN(WiderRow, detail), AUDITPIPE_COLUMN(WiderRow, required_x),
      AUDITPIPE_COLUMN(WiderRow, optional_x));
}

// NullRow with `note` a plain member: its table declares note NOT NULL.
struct StrictRow {
  std::int64_t message_id = 0;
  nullable<auditpipe::timestamp> at;
  nullable<std::int8_t> i8;
  nullable<std::int16_t> i16;
  nullable<std::int32_t> i32;
  nullable<std::int64_t> i64;
  nullable<std::uint8_t> u8;
  nullable<std::uint16_t> u16;
  nullable<std::uint32_t> u32;
  nullable<bool> flag;
  nullable<double> amount;
  auditpipe::fixed_string<16> note;
  nullable<auditpipe::fixed_string<64>> detail;
};
constexpr auto describe(auditpipe::type_tag<StrictRow>) {
  return auditpipe::table<StrictRow>(
      "audit_nulls", AUDITPIPE_COLUMN(StrictRow, message_id), AUDITPIPE_COLUMN(StrictRow, at),
      AUDITPIPE_COLUMN(StrictRow, i8), AUDITPIPE_COLUMN(StrictRow, i16),
      AUDITPIPE_COLUMN(StrictRow, i32), AUDITPIPE_COLUMN(StrictRow, i64),
      AUDITPIPE_COLUMN(StrictRow, u8), AUDITPIPE_COLUMN(StrictRow, u16),
      AUDITPIPE_COLUMN(StrictRow, u32), AUDITPIPE_COLUMN(StrictRow, flag),
      AUDITPIPE_COLUMN(StrictRow, amount), AUDITPIPE_COLUMN(StrictRow, note),
      AUDITPIPE_COLUMN(StrictRow, detail));
}

}  // namespace nulls

namespace {

using auditpipe::Status;
using nulls::NullRow;
using testing_support::null_row_column_count;
using testing_support::null_row_columns;

// A database holding audit_nulls, read back through its own C API.
class Database {
 public:
  virtual ~Database() = default;
  virtual std::string url(const std::string& options = "") = 0;
  virtual void exec(const std::string& sql) = 0;
  // The one value of a query; nullopt for SQL NULL (or no row).
  virtual std::optional<std::string> value(const std::string& sql) = 0;
  // What reads column `c` back in the common text form of null_row.h.
  virtual std::string expression(int c) { return null_row_columns[c]; }
  // The statement that adds `note` to audit_nulls in this dialect.
  virtual std::string add_note() = 0;
  // The password in url(), which no message may show; empty if none.
  virtual std::string password() { return ""; }

  std::shared_ptr<auditpipe::Sink> open(const std::string& options = "") {
    const std::string u = url(options);
    if (u.rfind("sqlite:", 0) == 0) return auditpipe::sqlite::open(u);
    if (u.rfind("mysql:", 0) == 0) return auditpipe::mysql::open(u);
    return auditpipe::postgresql::open(u);
  }
  long long count(const std::string& where = "") {
    const auto v = value("SELECT COUNT(*) FROM audit_nulls" + where);
    return v ? std::stoll(*v) : -1;
  }

 protected:
  static std::string join(const std::string& base, const std::string& options) {
    if (options.empty()) return base;
    return base + (base.find('?') == std::string::npos ? "?" : "&") + options;
  }
};

class Sqlite : public Database {
 public:
  std::string url(const std::string& options) override {
    return join("sqlite://" + path_, options);
  }
  void exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
        << sql << ": " << (message ? message : "");
    sqlite3_free(message);
    sqlite3_close(db);
  }
  std::optional<std::string> value(const std::string& sql) override {
    std::optional<std::string> v;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return v;
    }
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
      v = std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(st, 0)));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
  }
  std::string add_note() override { return R"(ALTER TABLE "audit_nulls" ADD COLUMN "note" TEXT)"; }

 private:
  testing_support::TempDir dir_;
  std::string path_ = dir_.file("nulls.db");
};

class Mysql : public Database {
 public:
  explicit Mysql(std::string path = "bulk") : path_(std::move(path)) {
    probe_.exec("DROP TABLE IF EXISTS audit_nulls, audit_nulls_seals, audit_nulls_unsealed");
  }
  std::string url(const std::string& options) override {
    return join(testing_support::mysql_url_with("write_path=" + path_), options);
  }
  void exec(const std::string& sql) override { probe_.exec(sql); }
  std::optional<std::string> value(const std::string& sql) override {
    const auto r = probe_.rows(sql);
    if (r.empty() || r[0].empty()) return std::nullopt;
    return r[0][0];
  }
  std::string expression(int c) override {
    if (c == 0) return "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', at)";
    return null_row_columns[c];
  }
  std::string add_note() override {
    return "ALTER TABLE `audit_nulls` ADD COLUMN `note` VARCHAR(16)";
  }
  std::string password() override {
    return auditpipe::parse_url(testing_support::mysql_test_url()).password.value_or("");
  }

 private:
  std::string path_;
  testing_support::MysqlProbe probe_;
};

class Postgresql : public Database {
 public:
  explicit Postgresql(std::string path = "copy") : path_(std::move(path)) {
    probe_.exec("DROP TABLE IF EXISTS audit_nulls, audit_nulls_seals, audit_nulls_unsealed");
  }
  std::string url(const std::string& options) override {
    return join(join(testing_support::postgresql_test_url(), "write_path=" + path_), options);
  }
  void exec(const std::string& sql) override { probe_.exec(sql); }
  std::optional<std::string> value(const std::string& sql) override {
    const auto r = probe_.rows(sql);
    if (r.empty() || r[0].empty()) return std::nullopt;
    return r[0][0];
  }
  std::string expression(int c) override {
    // Microseconds from the stored binary value, as the conformance test
    // reads them; the flag as 0/1. Both stay NULL for NULL.
    if (c == 0) {
      return "((('x' || encode(timestamptz_send(at), 'hex'))::bit(64)::bigint)::numeric + "
             "946684800000000)::text";
    }
    if (c == 8) return "flag::int";
    return null_row_columns[c];
  }
  std::string add_note() override { return R"(ALTER TABLE "audit_nulls" ADD COLUMN "note" TEXT)"; }
  std::string password() override {
    return auditpipe::parse_url(testing_support::postgresql_test_url()).password.value_or("");
  }

 private:
  std::string path_;
  testing_support::PostgresqlProbe probe_;
};

std::unique_ptr<Database> make_database(const std::string& name) {
  if (name == "sqlite") return std::make_unique<Sqlite>();
  if (name.rfind("mysql_", 0) == 0) return std::make_unique<Mysql>(name.substr(6));
  if (name == "postgresql_copy_text") return std::make_unique<Postgresql>("copy");
  return std::make_unique<Postgresql>(name.substr(11));  // "postgresql_"
}

// Every record of the pattern: each column NULL, zero/empty or a value
// across the batch; read back, NULL must be NULL and '' or 0 must not be.
class NullableRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(NullableRoundTrip, NullsZerosEmptyStringsAndValuesComeBackAsWritten) {
  auto db = make_database(GetParam());
  if (GetParam() == "postgresql_copy_text") {
    // A column whose server type has no binary form here (a domain) makes
    // the sink send COPY's text format.
    { auditpipe::Logger<NullRow> create(db->open()); }
    db->exec("DROP DOMAIN IF EXISTS audit_nulls_text CASCADE");
    db->exec("CREATE DOMAIN audit_nulls_text AS text");
    db->exec("ALTER TABLE audit_nulls ALTER COLUMN detail TYPE audit_nulls_text");
  }
  constexpr std::int64_t n = 30;
  {
    auditpipe::Options o;
    o.batch_size = 10;
    auditpipe::Logger<NullRow> logger(db->open(), o);
    for (std::int64_t i = 0; i < n; ++i) {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      *r = testing_support::null_row(i);
      ASSERT_EQ(r.commit(), Status::ok);
    }
    const auto report = logger.close();
    EXPECT_TRUE(report.drained);
    EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(n));
    EXPECT_EQ(report.stats.rejected_by_sink, 0u);
  }
  EXPECT_EQ(db->count(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < null_row_column_count; ++c) {
      const std::string where = " FROM audit_nulls WHERE message_id = " + std::to_string(i);
      const auto expected = testing_support::null_row_expected(i, c);
      SCOPED_TRACE("record " + std::to_string(i) + ", column " + null_row_columns[c]);
      const auto is_null = db->value("SELECT CASE WHEN " + std::string(null_row_columns[c]) +
                                     " IS NULL THEN 1 ELSE 0 END" + where);
      ASSERT_TRUE(is_null.has_value());
      EXPECT_EQ(*is_null, expected ? "0" : "1");
      const auto got = db->value("SELECT " + db->expression(c) + where);
      if (!expected) {
        EXPECT_FALSE(got.has_value()) << *got;
      } else if (c == 9) {  // the double, exactly, whatever the server's spelling
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(std::strtod(got->c_str(), nullptr), std::strtod(expected->c_str(), nullptr));
      } else {
        EXPECT_EQ(got, expected);
      }
    }
  }
}

// A NaN is a value: stored as NaN or refused and counted, never NULL
// (SQLite binds a NaN as NULL, so its sink refuses it).
TEST_P(NullableRoundTrip, ANanIsAValueAndANullsBytesAreNeverChecked) {
  auto db = make_database(GetParam());
  if (GetParam() == "postgresql_copy_text") GTEST_SKIP() << "the same as postgresql_copy here";
  auditpipe::CloseReport report;
  {
    auditpipe::Logger<NullRow> logger(db->open());
    for (std::int64_t i : {1, 2}) {
      auto r = logger.acquire();
      r->message_id = i;
      if (i == 1) r->amount = std::numeric_limits<double>::quiet_NaN();
      ASSERT_EQ(r.commit(), Status::ok);
    }
    // A NULL over bytes no column could hold (a NaN, a time outside every
    // database's range) is still just NULL: nothing checks or sends them.
    auto r = logger.acquire();
    r->message_id = 3;
    r->amount = std::numeric_limits<double>::quiet_NaN();
    r->amount = std::nullopt;
    r->at = auditpipe::timestamp{std::numeric_limits<std::int64_t>::min() / 2};
    r->at = std::nullopt;
    ASSERT_EQ(r.commit(), Status::ok);
    report = logger.close();
  }
  EXPECT_EQ(db->count(" WHERE message_id = 3 AND amount IS NULL AND at IS NULL"), 1);
  EXPECT_EQ(report.stats.written + report.stats.rejected_by_sink, 3u);
  EXPECT_EQ(db->count(" WHERE message_id = 2 AND amount IS NULL"), 1);
  EXPECT_EQ(db->count(" WHERE message_id = 1 AND amount IS NULL"), 0);
  EXPECT_EQ(db->count(" WHERE message_id = 1"), report.stats.rejected_by_sink == 0 ? 1 : 0);
}

INSTANTIATE_TEST_SUITE_P(Sinks, NullableRoundTrip,
                         ::testing::Values("sqlite", "mysql_bulk", "mysql_text", "mysql_load_data",
                                           "postgresql_copy", "postgresql_copy_text",
                                           "postgresql_insert"),
                         [](const auto& param_info) { return param_info.param; });

// The table check's schema changes, on each database.
class SchemaChange : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { db_ = make_database(GetParam()); }

  // The message open() fails with, or "" if it opens.
  template <class Record>
  std::string open_error(const std::string& options = "", const auditpipe::Options& o = {}) {
    try {
      auditpipe::Logger<Record> logger(db_->open(options), o);
      logger.close();
      return "";
    } catch (const auditpipe::error& e) {
      return e.what();
    }
  }
  // How many columns audit_nulls has.
  std::optional<std::string> column_count() {
    return db_->value(
        GetParam() == "sqlite"
            ? "SELECT COUNT(*) FROM pragma_table_info('audit_nulls')"
            : std::string("SELECT COUNT(*) FROM information_schema.columns WHERE table_name = "
                          "'audit_nulls' AND table_schema = ") +
                  (GetParam().rfind("mysql", 0) == 0 ? "DATABASE()" : "current_schema()"));
  }
  void expect_no_password(const std::string& message) {
    const std::string password = db_->password();
    if (!password.empty()) {
      EXPECT_EQ(message.find(password), std::string::npos) << message;
    }
  }

  std::unique_ptr<Database> db_;
};

// (a) The error prints the statements that add the missing columns, in
// the database's dialect, and running them is all it takes.
TEST_P(SchemaChange, AMissingColumnIsAnErrorThatPrintsTheAlterTableThatAddsIt) {
  ASSERT_EQ(open_error<nulls::OldRow>(), "");
  const std::string e = open_error<NullRow>();
  ASSERT_NE(e, "");
  EXPECT_NE(e.find("lacks the columns the record needs: i8, i16"), std::string::npos) << e;
  EXPECT_NE(e.find("\n  " + db_->add_note() + ";"), std::string::npos) << e;
  EXPECT_NE(e.find("migrate=add_columns"), std::string::npos) << e;
  expect_no_password(e);
  std::istringstream lines(e);
  int statements = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ALTER TABLE ", 0) != 0) continue;
    db_->exec(line.substr(2, line.size() - 3));  // without the indent and the ';'
    ++statements;
  }
  EXPECT_EQ(statements, null_row_column_count - 1);  // all but `at`
  EXPECT_EQ(open_error<NullRow>(), "");
}

// (b) migrate=add_columns adds them at open, nullable, logging each
// statement: rows already there have NULL in them, new rows their values.
TEST_P(SchemaChange, MigrateAddColumnsAddsTheMissingColumnsNullableAndLogsEach) {
  {
    auditpipe::Logger<nulls::OldRow> old(db_->open());
    auto r = old.acquire();
    r->message_id = 100;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  const auto previous = auditpipe::diagnostics();
  auditpipe::set_diagnostics_logger(std::make_shared<spdlog::logger>("auditpipe", ring));
  {
    auditpipe::Logger<NullRow> logger(db_->open("migrate=add_columns"));
    for (std::int64_t i = 0; i < 3; ++i) {
      auto r = logger.acquire();
      *r = testing_support::null_row(i);
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_EQ(logger.close().stats.written, 3u);
  }
  auditpipe::set_diagnostics_logger(previous);
  std::string logged;
  for (const auto& line : ring->last_formatted()) logged += line;
  EXPECT_NE(logged.find(db_->add_note()), std::string::npos) << logged;
  expect_no_password(logged);
  EXPECT_EQ(db_->count(" WHERE message_id = 100 AND note IS NULL AND i64 IS NULL"), 1);
  // New rows as the pattern has them: note NULL in one, a value in another.
  for (std::int64_t i = 0; i < 3; ++i) {
    const auto expected = testing_support::null_row_expected(i, 10);
    const std::string where = " WHERE message_id = " + std::to_string(i);
    EXPECT_EQ(db_->count(where + " AND note IS NULL"), expected ? 0 : 1) << i;
    EXPECT_EQ(db_->value("SELECT note FROM audit_nulls" + where), expected) << i;
  }
  // Opening again finds nothing to add.
  EXPECT_EQ(open_error<NullRow>(), "");
}

// (c) An extra column the insert leaves out, NOT NULL without a default,
// would refuse every row: refused at open, named; a nullable extra passes.
TEST_P(SchemaChange, AnExtraNotNullColumnWithoutADefaultIsRefusedAtOpenByName) {
  ASSERT_EQ(open_error<nulls::WiderRow>(), "");
  const std::string e = open_error<NullRow>();
  EXPECT_NE(e.find("NOT NULL without a default: required_x;"), std::string::npos) << e;
  EXPECT_EQ(e.find("optional_x"), std::string::npos) << e;
  expect_no_password(e);
}

// (c') With migrate=add_columns as well: the table is refused for the
// column it has before any column is added, so a refused open leaves it as
// it was (before, the ALTERs ran and the open was refused after them).
TEST_P(SchemaChange, AnOpenRefusedForAColumnTheTableHasAddsNoColumns) {
  ASSERT_EQ(open_error<nulls::OldRequiredRow>(), "");
  const auto before = column_count();
  ASSERT_TRUE(before);
  EXPECT_EQ(*before, "5");  // message_id, at, required_x, source_id, seq
  std::string e = open_error<NullRow>("migrate=add_columns");
  EXPECT_NE(e.find("NOT NULL without a default: required_x;"), std::string::npos) << e;
  EXPECT_EQ(column_count(), before);
  expect_no_password(e);
  // Nor for its keys: no unique key on (source_id, seq).
  db_->exec("DROP TABLE audit_nulls");
  db_->exec(
      "CREATE TABLE audit_nulls (message_id BIGINT NOT NULL, source_id BIGINT NOT NULL, seq "
      "BIGINT NOT NULL)");
  e = open_error<NullRow>("migrate=add_columns");
  EXPECT_NE(e.find("has no unique key on (source_id, seq)"), std::string::npos) << e;
  EXPECT_EQ(column_count(), "3");
}

// (c'') Nor for the sink's refusals of the table's rows: a sealed table
// opened without seal= (where migrate=add_columns is allowed), and rows
// under the sources a fixed source_id_base gives. Before, the columns were
// added and the open refused after them: the sealed table's rows then read
// back with the new column, and no seal verified.
TEST_P(SchemaChange, AnOpenRefusedForTheTablesRowsAddsNoColumns) {
  auditpipe::Options fixed;
  fixed.source_id_base = std::int64_t{91} << 16;
  {
    auditpipe::Logger<nulls::OldRow> sealed(db_->open("seal=hash"), fixed);
    auto r = sealed.acquire();
    r->message_id = 1;
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_EQ(sealed.close().stats.written, 1u);
  }
  const auto before = column_count();
  ASSERT_TRUE(before);
  EXPECT_EQ(*before, "4");  // message_id, at, source_id, seq
  std::string e = open_error<NullRow>("migrate=add_columns");
  EXPECT_NE(e.find("is sealed"), std::string::npos) << e;
  EXPECT_EQ(column_count(), before);
  db_->exec("DROP TABLE audit_nulls_seals");
  e = open_error<NullRow>("migrate=add_columns", fixed);
  EXPECT_NE(e.find("holds rows of source " + std::to_string(*fixed.source_id_base)),
            std::string::npos)
      << e;
  EXPECT_EQ(column_count(), before);
  expect_no_password(e);
}

// (d) A nullable member whose column is NOT NULL is refused at open, named.
TEST_P(SchemaChange, ANotNullColumnForANullableMemberIsRefusedAtOpenByName) {
  ASSERT_EQ(open_error<nulls::StrictRow>(), "");
  const std::string e = open_error<NullRow>();
  EXPECT_NE(e.find("may be NULL (auditpipe::nullable): note;"), std::string::npos) << e;
  expect_no_password(e);
}

TEST_P(SchemaChange, AnUnknownMigrateValueIsRefused) {
  EXPECT_THROW(db_->open("migrate=everything"), auditpipe::error);
}

INSTANTIATE_TEST_SUITE_P(Databases, SchemaChange,
                         ::testing::Values("sqlite", "mysql_bulk", "postgresql_copy"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
