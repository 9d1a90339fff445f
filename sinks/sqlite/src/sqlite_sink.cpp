// The SQLite sink on the SQL sink skeleton: one connection (a SOCI
// session with WAL, the busy timeout and the synchronous level set once),
// one transaction per batch with a prepared insert and bulk (vector)
// binding, and SQLite's result codes sorted for the skeleton. A file is
// never unreachable: every open() failure is a configuration error.
#include "auditpipe/sqlite/sqlite_sink.h"

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

#include "auditpipe/sink/sql_sink.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "sqlite_connection.h"
#include "sqlite_dialect.h"

namespace auditpipe::sqlite {

namespace {

struct SqliteConfig {
  SqlSinkSettings sink;  // the URL (anything that looks like a password masked), create_table
  std::string path;
  std::string synchronous = "NORMAL";
  int busy_timeout_ms = 5000;
};

[[noreturn]] void bad_url(std::string_view url, const std::string& why) {
  throw error("auditpipe: malformed SQLite URL '" + redact_url(url) + "': " + why);
}

SqliteConfig parse_sqlite_url(std::string_view url) {
  SqliteConfig c;
  c.sink.redacted_url = redact_url(url);
  // SQLite has one writer at a time per file, and no server to pool
  // connections to: one connection, one write at a time.
  c.sink.single_connection = true;
  constexpr std::string_view prefix = "sqlite://";
  if (url.size() < prefix.size() ||
      !std::equal(prefix.begin(), prefix.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    bad_url(url, "expected sqlite:///absolute/path.db or sqlite://relative/path.db");
  }
  std::string_view rest = url.substr(prefix.size());
  // A file path has no user part: "sqlite://user:secret@/x.db" is a mistake
  // whose password must not become part of a path in messages. (A relative
  // file whose first component has an '@' is written sqlite://./a@b.db.)
  if (rest.substr(0, rest.find_first_of("/?")).find('@') != std::string_view::npos) {
    bad_url(url, "SQLite URLs take no user or password (sqlite:///absolute/path.db)");
  }
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  try {
    c.path = percent_decode(rest);
    for (const auto& [key, value] : parse_query(query)) {
      if (key == "create_table") {
        if (value != "true" && value != "false") bad_url(url, "create_table must be true or false");
        c.sink.create_table = value == "true";
      } else if (key == "synchronous") {
        std::string v = value;
        std::transform(v.begin(), v.end(), v.begin(), [](char ch) {
          return static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        });
        if (v != "NORMAL" && v != "FULL") bad_url(url, "synchronous must be normal or full");
        c.synchronous = v;
      } else if (key == "busy_timeout_ms") {
        const auto [p, ec] =
            std::from_chars(value.data(), value.data() + value.size(), c.busy_timeout_ms);
        if (ec != std::errc() || p != value.data() + value.size() || c.busy_timeout_ms < 0) {
          bad_url(url, "busy_timeout_ms must be a non-negative integer");
        }
      } else {
        bad_url(url,
                "unknown option '" + key + "' (known: create_table, synchronous, busy_timeout_ms)");
      }
    }
  } catch (const error& e) {
    const std::string_view what = e.what();
    if (what.find("malformed SQLite URL") != std::string_view::npos) throw;
    bad_url(url, std::string(what));
  }
  if (c.path.empty()) bad_url(url, "no database file path");
  if (c.path.find('\0') != std::string::npos) bad_url(url, "the path contains a NUL byte");
  // SOCI's SQLite connection string treats '=' and '"' as syntax.
  if (c.path.find_first_of("=\"") != std::string::npos) {
    bad_url(url, "paths containing '=' or '\"' are not supported");
  }
  c.sink.table_location = "in '" + c.path + "'";
  return c;
}

// What the skeleton does about a SQLite result code: the data itself is
// rejected; a file this process may no longer write (its permissions or
// mount changed after open, or an authorizer refuses) is a configuration
// failure, retried slowly with health down until someone fixes it;
// anything else (the database is busy, the disk is full) is retried.
bool is_configuration_error(int code) {
  switch (code & 0xFF) {
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return true;
    default:
      return false;
  }
}

bool is_data_error(int code) {
  switch (code & 0xFF) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

class SqliteSink final : public SqlSink {
 public:
  explicit SqliteSink(SqliteConfig config)
      : SqlSink(sqlite_dialect, config.sink), config_(std::move(config)) {}
  ~SqliteSink() override { close(); }
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

 private:
  std::unique_ptr<SqlConnection> connect() override {
    auto c = std::make_unique<SqliteConnection>();
    try {
      c->session.open(::soci::sqlite3, config_.path);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot open SQLite database '" + config_.path + "': " + e.what() +
                  " (does the directory exist and is it writable?)");
    }
    // The busy timeout first: switching a new file to WAL takes a write
    // lock, and loggers opening the same file at once would otherwise get
    // SQLITE_BUSY ("database is locked") instead of waiting their turn.
    c->session << "PRAGMA busy_timeout=" + std::to_string(config_.busy_timeout_ms);
    // SQLite opens a file it may not write read-only without a word; every
    // batch would then fail. Refused here, at construction, instead.
    auto* handle = static_cast<::soci::sqlite3_session_backend*>(c->session.get_backend())->conn_;
    c->path = config_.path;
    if (sqlite3_db_readonly(handle, "main") == 1) {
      throw error("auditpipe: SQLite database '" + config_.path +
                  "' is read-only for this process (file permissions or a read-only mount)");
    }
    std::string mode;
    try {
      c->session << "PRAGMA journal_mode=WAL", ::soci::into(mode);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot switch SQLite database '" + config_.path +
                  "' to WAL: " + e.what() + " (is its directory writable?)");
    }
    c->session << "PRAGMA synchronous=" + config_.synchronous;
    return c;
  }

  void prepare_writes(SqlConnection& connection) override {
    auto& c = static_cast<SqliteConnection&>(connection);
    c.bound.reserve(table().columns.size());
    for (const Column& col : table().columns) c.bound.push_back({&col, {}, {}, {}});
    c.insert = std::make_unique<::soci::statement>(c.session);
    for (SqliteConnection::Bound& b : c.bound) {
      if (b.column->type == ColumnType::text) {
        c.insert->exchange(::soci::use(b.texts));
      } else if (b.column->type == ColumnType::float64) {
        c.insert->exchange(::soci::use(b.reals));
      } else {
        c.insert->exchange(::soci::use(b.integers));
      }
    }
    c.insert->exchange(::soci::use(c.source_ids));
    c.insert->exchange(::soci::use(c.seqs));
    c.insert->alloc();
    c.insert->prepare(table_text().single_row_insert());
    c.insert->define_and_bind();
  }

  std::optional<WriteFailure> write_batch(SqlConnection& connection, const Batch& batch) override {
    auto& c = static_cast<SqliteConnection&>(connection);
    try {
      fill(c, batch);
      ::soci::transaction tx(c.session);
      c.insert->execute(true);
      tx.commit();
      return std::nullopt;
    } catch (const ::soci::sqlite3_soci_error& e) {
      // SQLITE_INTERRUPT (cancel()) is `other`: retried, as the Sink
      // contract wants of a cancelled write.
      const WriteFailure::Kind kind = is_data_error(e.result()) ? WriteFailure::Kind::data
                                      : is_configuration_error(e.result())
                                          ? WriteFailure::Kind::configuration
                                          : WriteFailure::Kind::other;
      return WriteFailure{kind, "SQLite error " + std::to_string(e.result()) + ": " + e.what()};
    }
  }

  static void fill(SqliteConnection& c, const Batch& batch) {
    const std::size_t n = batch.records.size();
    c.source_ids.resize(n);
    c.seqs.resize(n);
    for (SqliteConnection::Bound& b : c.bound) {
      if (b.column->type == ColumnType::text) {
        b.texts.resize(n);
      } else if (b.column->type == ColumnType::float64) {
        b.reals.resize(n);
      } else {
        b.integers.resize(n);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const RecordRef& r = batch.records[i];
      c.source_ids[i] = r.source_id;
      c.seqs[i] = r.seq;
      for (SqliteConnection::Bound& b : c.bound) {
        if (b.column->type == ColumnType::text) {
          b.texts[i].assign(read_text(r.data, *b.column));
        } else if (b.column->type == ColumnType::float64) {
          b.reals[i] = read_float64(r.data, *b.column);
        } else {
          b.integers[i] = read_integer(r.data, *b.column);
        }
      }
    }
  }

  const SqliteConfig config_;
};

}  // namespace

std::shared_ptr<Sink> open(std::string_view url) {
  return std::make_shared<SqliteSink>(parse_sqlite_url(url));
}

}  // namespace auditpipe::sqlite
