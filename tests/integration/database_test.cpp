// auditpipe::Database on every database this build has (SQLite in a
// temporary directory, the test MariaDB and PostgreSQL servers): schemas read
// back from tables a sink made and from hand-written ones, the round trip
// (a schema read back opens a sink on the same table), unsupported columns,
// statements with parameters, and messages without passwords.
#include "auditpipe/database.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/auditpipe.h"
#include "auditpipe/nullable.h"
#include "auditpipe/open.h"
#include "auditpipe/status.h"
#include "mysql_probe.h"
#include "postgresql_probe.h"
#include "temp_dir.h"

namespace {

using auditpipe::ColumnSpec;
using auditpipe::ColumnType;
using Rows = std::vector<std::vector<std::optional<std::string>>>;

// One column of every kind, some nullable, text short and long.
struct EveryType {
  bool flag = false;
  std::int8_t i8 = 0;
  std::int16_t i16 = 0;
  std::int32_t i32 = 0;
  std::int64_t i64 = 0;
  std::uint8_t u8 = 0;
  std::uint16_t u16 = 0;
  std::uint32_t u32 = 0;
  double amount = 0;
  auditpipe::timestamp at;
  auditpipe::fixed_string<40> name;
  auditpipe::fixed_string<2000> body;
  auditpipe::nullable<std::int32_t> maybe_i32;
  auditpipe::nullable<auditpipe::fixed_string<16>> maybe_note;
  auditpipe::nullable<auditpipe::timestamp> maybe_at;
};

constexpr auto describe(auditpipe::type_tag<EveryType>) {
  return auditpipe::table<EveryType>(
      "db_every", AUDITPIPE_COLUMN(EveryType, flag), AUDITPIPE_COLUMN(EveryType, i8),
      AUDITPIPE_COLUMN(EveryType, i16), AUDITPIPE_COLUMN(EveryType, i32),
      AUDITPIPE_COLUMN(EveryType, i64), AUDITPIPE_COLUMN(EveryType, u8),
      AUDITPIPE_COLUMN(EveryType, u16), AUDITPIPE_COLUMN(EveryType, u32),
      AUDITPIPE_COLUMN(EveryType, amount), AUDITPIPE_COLUMN(EveryType, at),
      AUDITPIPE_COLUMN(EveryType, name), AUDITPIPE_COLUMN(EveryType, body),
      AUDITPIPE_COLUMN(EveryType, maybe_i32), AUDITPIPE_COLUMN(EveryType, maybe_note),
      AUDITPIPE_COLUMN(EveryType, maybe_at));
}

constexpr std::uint32_t unbounded = 1024;

// What a column the sink created reads back as: the type its dialect gave
// the record's column, mapped back (PostgreSQL has no 8-bit or unsigned
// types: one size up; SQLite has only INTEGER, REAL and TEXT).
ColumnSpec expected(const std::string& dialect, const auditpipe::Column& c) {
  ColumnSpec s{std::string(c.name), c.type, c.max_length, c.nullable, std::nullopt};
  if (dialect == "postgresql") {
    if (c.type == ColumnType::int8 || c.type == ColumnType::uint8) s.type = ColumnType::int16;
    if (c.type == ColumnType::uint16) s.type = ColumnType::int32;
    if (c.type == ColumnType::uint32) s.type = ColumnType::int64;
    if (c.type == ColumnType::text) s.max_length = unbounded;  // TEXT
  } else if (dialect == "sqlite") {
    if (c.type != ColumnType::float64 && c.type != ColumnType::text) s.type = ColumnType::int64;
    if (c.type == ColumnType::text) s.max_length = unbounded;
  } else if (c.type == ColumnType::text && c.max_length > 1024) {
    s.max_length = unbounded;  // TEXT (65535 bytes) capped at `unbounded`
  } else if (c.type == ColumnType::text) {
    // VARCHAR(n) in utf8mb4: n characters, 4n bytes.
    s.max_chars = c.max_length;
    s.max_length = 4 * c.max_length;
  }
  return s;
}

void expect_specs(const std::vector<ColumnSpec>& got, const std::vector<ColumnSpec>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("column " + want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(auditpipe::to_string(got[i].type), auditpipe::to_string(want[i].type));
    EXPECT_EQ(got[i].max_length, want[i].max_length);
    EXPECT_EQ(got[i].max_chars, want[i].max_chars);
    EXPECT_EQ(got[i].nullable, want[i].nullable);
    EXPECT_EQ(got[i].default_value, want[i].default_value);
  }
}

// A TableDescriptor over `specs`, as a runtime schema's would be for the
// table check (which reads names, types, lengths and nullability; nothing
// is written through it).
struct SpecDescriptor {
  explicit SpecDescriptor(const std::string& table, const std::vector<ColumnSpec>& specs)
      : name(table), prototype(64) {
    for (const ColumnSpec& s : specs) {
      columns.push_back({s.name, s.type, 0, s.type == ColumnType::text ? s.max_length + 8 : 8,
                         s.max_length, s.nullable, 0, s.max_chars});
    }
    descriptor = {name, columns, 64, 8, prototype.data()};
  }
  std::string name;
  std::vector<auditpipe::Column> columns;
  std::vector<std::byte> prototype;
  auditpipe::TableDescriptor descriptor{};
};

// Opens a sink of `url` on `specs`' table: the sink's own table check.
void open_sink_on(const std::string& url, const std::string& table,
                  const std::vector<ColumnSpec>& specs) {
  const SpecDescriptor d(table, specs);
  auto sink = auditpipe::open(url + (url.find('?') == std::string::npos ? "?" : "&") +
                              "create_table=false");
  EXPECT_NO_THROW(sink->open(d.descriptor, auditpipe::SinkContext{}));
  sink->close();
}

class DatabaseTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      url_ = "sqlite://" + dir_.path().string() + "/db.sqlite";
    } else if (GetParam() == "mysql") {
      url_ = testing_support::mysql_test_url();
    } else {
      url_ = testing_support::postgresql_test_url();
    }
    db_ = auditpipe::Database::connect(url_);
    for (const char* t : {"db_every", "db_hand", "db_bad", "db_kv", "db_nokey"}) {
      db_->execute("DROP TABLE IF EXISTS " + db_->quote(t));
    }
  }
  bool is(const char* dialect) const { return GetParam() == dialect; }

  testing_support::TempDir dir_;
  std::string url_;
  std::unique_ptr<auditpipe::Database> db_;
};

TEST_P(DatabaseTest, NamesItsDialectAndQuotes) {
  EXPECT_EQ(db_->dialect(), GetParam());
  EXPECT_EQ(db_->quote("a\"b`c"), is("mysql") ? "`a\"b``c`" : "\"a\"\"b`c\"");
  if (!is("sqlite")) {
    EXPECT_EQ(db_->describe().find("auditpipe-test"), std::string::npos) << db_->describe();
    EXPECT_NE(db_->describe().find("***"), std::string::npos) << db_->describe();
  }
}

TEST_P(DatabaseTest, ReadsBackATableASinkCreated) {
  {
    auto sink = auditpipe::open(url_);
    sink->open(auditpipe::descriptor_of<EveryType>(), auditpipe::SinkContext{});
    sink->close();
  }
  const auto schema = db_->read_schema("db_every", unbounded, /*require_key=*/true);
  ASSERT_TRUE(schema);
  EXPECT_EQ(schema->table(), "db_every");
  std::vector<ColumnSpec> want;
  for (const auto& c : auditpipe::descriptor_of<EveryType>().columns) {
    want.push_back(expected(GetParam(), c));
  }
  expect_specs(schema->columns(), want);
  // The round trip: the schema read back passes the sink's table check.
  open_sink_on(url_, "db_every", schema->columns());
}

TEST_P(DatabaseTest, ReadsBackAHandWrittenTable) {
  if (is("mysql")) {
    db_->execute(
        "CREATE TABLE db_hand (id BIGINT NOT NULL, name VARCHAR(20) NOT NULL DEFAULT 'it''s', "
        "note TEXT NULL, flag BOOLEAN NOT NULL DEFAULT TRUE, amount DOUBLE NULL DEFAULT -1.5, "
        "at DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6), small TINYINT UNSIGNED NOT NULL "
        "DEFAULT 7, word VARCHAR(8) NULL DEFAULT 'NULL', gone VARCHAR(8) NULL DEFAULT NULL, "
        "count INT UNSIGNED NOT NULL DEFAULT 0, source_id BIGINT NOT NULL, seq BIGINT NOT NULL, "
        "PRIMARY KEY (source_id, seq))");
  } else if (is("postgresql")) {
    db_->execute(
        "CREATE TABLE db_hand (id BIGINT NOT NULL, name VARCHAR(20) NOT NULL DEFAULT 'it''s', "
        "note TEXT, flag BOOLEAN NOT NULL DEFAULT TRUE, amount DOUBLE PRECISION DEFAULT -1.5, "
        "at TIMESTAMPTZ DEFAULT now(), small SMALLINT NOT NULL DEFAULT 7, word VARCHAR(8) "
        "DEFAULT 'NULL', gone VARCHAR DEFAULT NULL, count BIGSERIAL, source_id BIGINT NOT "
        "NULL, seq BIGINT NOT NULL, PRIMARY KEY (source_id, seq))");
  } else {
    db_->execute(
        "CREATE TABLE db_hand (id INTEGER NOT NULL, name VARCHAR(20) NOT NULL DEFAULT 'it''s', "
        "note TEXT, flag INTEGER NOT NULL DEFAULT 1, amount REAL DEFAULT -1.5, at INTEGER "
        "DEFAULT CURRENT_TIMESTAMP, small INTEGER NOT NULL DEFAULT 7, word TEXT DEFAULT 'NULL', "
        "gone TEXT DEFAULT NULL, count INTEGER NOT NULL DEFAULT 0, source_id INTEGER NOT NULL, "
        "seq INTEGER NOT NULL, UNIQUE (source_id, seq))");
  }
  const auto schema = db_->read_schema("db_hand", unbounded, /*require_key=*/true);
  ASSERT_TRUE(schema);
  const bool pg = is("postgresql"), sqlite = is("sqlite");
  // VARCHAR(n) holds n characters (utf8mb4 on MariaDB, UTF-8 on
  // PostgreSQL): up to 4n bytes. SQLite keeps no length.
  const std::uint32_t name_length = sqlite ? unbounded : 80, word_length = sqlite ? unbounded : 32;
  const ColumnType integer = sqlite ? ColumnType::int64 : ColumnType::int16;
  auto chars = [&](ColumnSpec s, std::uint32_t n) {
    s.max_chars = sqlite ? 0 : n;
    return s;
  };
  const std::vector<ColumnSpec> want = {
      {"id", ColumnType::int64, 0, false, std::nullopt},
      chars({"name", ColumnType::text, name_length, false, "it's"}, 20),
      {"note", ColumnType::text, unbounded, true, std::nullopt},
      {"flag", sqlite ? ColumnType::int64 : ColumnType::boolean, 0, false, pg ? "true" : "1"},
      {"amount", ColumnType::float64, 0, true, "-1.5"},
      {"at", sqlite ? ColumnType::int64 : ColumnType::timestamp, 0, true, std::nullopt},
      {"small",
       pg       ? integer
       : sqlite ? ColumnType::int64
                : ColumnType::uint8,
       0, false, "7"},
      // The text NULL is a value, the keyword NULL none.
      chars({"word", ColumnType::text, word_length, true, "NULL"}, 8),
      // PostgreSQL's VARCHAR without a length is TEXT.
      chars({"gone", ColumnType::text, pg || sqlite ? unbounded : 32, true, std::nullopt},
            pg ? 0 : 8),
      // PostgreSQL: a BIGSERIAL's nextval(...) is an expression, left out.
      {"count",
       pg       ? ColumnType::int64
       : sqlite ? ColumnType::int64
                : ColumnType::uint32,
       0, false, pg ? std::nullopt : std::optional<std::string>("0")},
  };
  expect_specs(schema->columns(), want);
  open_sink_on(url_, "db_hand", schema->columns());
}

TEST_P(DatabaseTest, NoSuchTableIsNullopt) {
  EXPECT_FALSE(db_->read_schema("db_no_such_table"));
  EXPECT_FALSE(db_->read_schema("db_no_such_table", 10, true));
}

TEST_P(DatabaseTest, RequireKeyRefusesATableWithoutIt) {
  db_->execute(is("mysql") ? "CREATE TABLE db_nokey (a INT, source_id BIGINT, seq BIGINT)"
                           : "CREATE TABLE db_nokey (a INTEGER, source_id BIGINT, seq BIGINT)");
  EXPECT_TRUE(db_->read_schema("db_nokey"));
  try {
    db_->read_schema("db_nokey", unbounded, true);
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("db_nokey"), std::string::npos) << what;
    EXPECT_NE(what.find("unique key on (source_id, seq)"), std::string::npos) << what;
  }
  db_->execute("DROP TABLE db_nokey");
  db_->execute("CREATE TABLE db_nokey (a INTEGER)");
  try {
    db_->read_schema("db_nokey", unbounded, true);
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("no (source_id, seq) columns"), std::string::npos)
        << e.what();
  }
}

TEST_P(DatabaseTest, UnsupportedColumnsAreNamed) {
  std::vector<std::string> named;  // column, then a piece of its type, per refused column
  if (is("mysql")) {
    db_->execute(
        "CREATE TABLE db_bad (ok INT, b BLOB, u BIGINT UNSIGNED, d DATETIME, ts TIMESTAMP(6) "
        "NULL, c CHAR(4), m MEDIUMINT)");
    named = {"column b is blob",       "column u is bigint(20) unsigned",
             "column d is datetime",   "DATETIME(6)",
             "column ts is timestamp", "1970-2038",
             "column c is char(4)",    "column m is mediumint"};
  } else if (is("postgresql")) {
    db_->execute(
        "CREATE TABLE db_bad (ok INTEGER, b BYTEA, n NUMERIC(30,10), t TIMESTAMP(3), "
        "c CHAR(4), r REAL)");
    named = {"column b is bytea", "column n is numeric(30,10)", "timestamp(3) without time zone",
             "column c is character(4)", "column r is real"};
  } else {
    db_->execute("CREATE TABLE db_bad (ok INTEGER, b BLOB, n DECIMAL(30,10), x)");
    named = {"column b is BLOB", "column n is DECIMAL(30,10)", "column x is (no type)"};
  }
  try {
    db_->read_schema("db_bad");
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("table db_bad"), std::string::npos) << what;
    EXPECT_EQ(what.find("column ok"), std::string::npos) << what;
    for (const std::string& piece : named) EXPECT_NE(what.find(piece), std::string::npos) << what;
    if (!is("sqlite")) {
      EXPECT_EQ(what.find("auditpipe-test"), std::string::npos) << what;
    }
  }
}

TEST_P(DatabaseTest, StatementsTakeTextParameters) {
  db_->execute(is("mysql") ? "CREATE TABLE db_kv (k VARCHAR(20) NOT NULL, v INT NULL, "
                             "at DATETIME(6) NULL)"
               : is("postgresql")
                   ? "CREATE TABLE db_kv (k VARCHAR(20) NOT NULL, v INTEGER, at TIMESTAMPTZ)"
                   : "CREATE TABLE db_kv (k TEXT NOT NULL, v INTEGER, at TEXT) STRICT");
  const std::string insert = "INSERT INTO db_kv (k, v) VALUES (?, ?)";
  db_->execute(insert, {"it's a ? \\ \"x\"", "42"});
  db_->execute(insert, {"b", "-7"});
  db_->execute("INSERT INTO db_kv (k, v) VALUES (?, NULL)", {"c"});
  const Rows all = db_->query("SELECT k, v FROM db_kv ORDER BY v");
  ASSERT_EQ(all.size(), 3u);
  // NULL sorts first in MySQL and SQLite, last in PostgreSQL.
  const Rows want_tail = {{"b", "-7"}, {"it's a ? \\ \"x\"", "42"}};
  const Rows got_tail(all.begin() + (is("postgresql") ? 0 : 1),
                      all.begin() + (is("postgresql") ? 2 : 3));
  EXPECT_EQ(got_tail, want_tail);
  const auto null_row = is("postgresql") ? all[2] : all[0];
  EXPECT_EQ(null_row, (std::vector<std::optional<std::string>>{"c", std::nullopt}));
  // A ? inside a literal or a comment is not a parameter.
  EXPECT_EQ(db_->query("SELECT 'what?', v FROM db_kv WHERE k = ? -- and ?\n", {"b"}),
            (Rows{{"what?", "-7"}}));
  EXPECT_TRUE(db_->query("SELECT k FROM db_kv WHERE k = ?", {"nobody"}).empty());
  EXPECT_THROW(db_->query("SELECT k FROM db_kv WHERE k = ?", {}), auditpipe::error);
  EXPECT_THROW(db_->execute("INSERT INTO db_kv (k) VALUES (?)", {"a", "b"}), auditpipe::error);
  try {
    db_->execute("INSERT INTO db_no_such_table (k) VALUES (?)", {"x"});
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    EXPECT_NE(std::string(e.what()).find("db_no_such_table"), std::string::npos) << e.what();
  }
}

TEST_P(DatabaseTest, AWrongPasswordIsAnErrorWithoutIt) {
  if (is("sqlite")) GTEST_SKIP() << "no passwords";
  auditpipe::Url u = auditpipe::parse_url(url_);
  const std::string wrong = "WrongPw-s3cret";
  const std::string url = u.scheme + "://" + u.user + ":" + wrong + "@" + u.hosts.at(0).host + ":" +
                          std::to_string(*u.hosts.at(0).port) + "/" + u.path;
  try {
    auditpipe::Database::connect(url);
    FAIL() << "connected with a wrong password";
  } catch (const auditpipe::unreachable& e) {
    FAIL() << "a server that answered is not unreachable: " << e.what();
  } catch (const auditpipe::error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find(wrong), std::string::npos) << what;
    EXPECT_NE(what.find("***"), std::string::npos) << what;
  }
}

TEST_P(DatabaseTest, NoServerIsUnreachable) {
  if (is("sqlite")) GTEST_SKIP() << "a file is never unreachable";
  const std::string url = is("mysql") ? "mysql://u:pw-hidden@127.0.0.1:1/db?connect_timeout=2"
                                      : "postgresql://u:pw-hidden@127.0.0.1:1/db?connect_timeout=2";
  try {
    auditpipe::Database::connect(url);
    FAIL() << "connected to port 1";
  } catch (const auditpipe::unreachable& e) {
    EXPECT_EQ(std::string(e.what()).find("pw-hidden"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Databases, DatabaseTest, testing::Values("sqlite", "mysql", "postgresql"),
                         [](const auto& p) { return p.param; });

TEST(DatabaseConnect, UnknownSchemeNamesTheSupportedOnes) {
  try {
    auditpipe::Database::connect("oracle://scott:tiger-pw@db/orcl");
    FAIL() << "no error";
  } catch (const auditpipe::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(supported:" AUDITPIPE_TEST_SUPPORTED_SCHEMES ")"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("tiger-pw"), std::string::npos) << what;
  }
  EXPECT_THROW(auditpipe::Database::connect("mysql://nobody@/"), auditpipe::error);
}

}  // namespace
