// SqliteConnection (sqlite_connection.h): the sqlite:// URL, the file opened
// as the sink writes it, the catalog queries and DDL of the skeleton's table
// check and Database's statements, and the interrupt.
#include "sqlite_connection.h"

#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <charconv>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "fork_guard.h"

namespace auditpipe::sqlite {

namespace {

// The connection's busy handler: waits for a lock another connection holds
// in steps of at most 10 ms, until the busy timeout has passed since this
// lock was first found held, and gives up at once once cancel_io() ran.
int wait_while_busy(void* connection, int count) noexcept {
  auto& c = *static_cast<SqliteConnection*>(connection);
  const auto now = std::chrono::steady_clock::now();
  if (count == 0) c.busy_since = now;  // a new wait for a lock
  const auto waited = now - c.busy_since;
  if (c.cancelled.load(std::memory_order_relaxed) || waited >= c.busy_timeout) return 0;
  const std::chrono::steady_clock::duration step =
      std::chrono::milliseconds(count < 4 ? 1 << count : 10);
  std::this_thread::sleep_for(std::min(step, c.busy_timeout - waited));
  return 1;
}

// Whether the statement that just failed on `handle` was refused for a
// lock another connection holds (SQLITE_BUSY, SQLITE_LOCKED, any extended
// form), which trying again later may get past.
bool refused_as_busy(sqlite_api::sqlite3* handle) noexcept {
  const int code = sqlite_api::sqlite3_errcode(handle) & 0xff;
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

// Runs `statement` on `c`, again every 10 ms while it is refused as busy,
// until `c.busy_timeout` has passed since the first try or `c` is
// cancelled. SQLite answers SQLITE_BUSY at once, without the busy handler's
// wait, where waiting could deadlock or a WAL file is being recovered.
// When it gives up, or on any other error, `fail(e, busy, waited)` may
// throw an error of its own; if it returns, the original one is rethrown.
template <class Statement, class Fail>
void retry_while_busy(SqliteConnection& c, Statement statement, Fail fail) {
  const auto started = std::chrono::steady_clock::now();
  const auto give_up = started + c.busy_timeout;
  for (;;) {
    try {
      statement();
      return;
    } catch (const std::exception& e) {
      const bool busy = refused_as_busy(c.handle);
      const auto now = std::chrono::steady_clock::now();
      if (busy && now < give_up && !c.cancelled.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(10), give_up - now));
        continue;
      }
      fail(e, busy, std::chrono::duration_cast<std::chrono::milliseconds>(now - started));
      throw;
    }
  }
}

[[noreturn]] void bad_url(std::string_view url, const std::string& why) {
  throw url_error("auditpipe: malformed SQLite URL '" + redact_url(url) + "': " + why);
}

// SOCI 4.0's SQLite backend opens the file in SQLite's default threading
// mode (every API call locks the connection's mutex) and read-write, and
// takes no flag to change either; its handle is a public member, so the
// file is opened again with the flags wanted and that handle given to the
// session (which closes it), before anything used the first. False (the
// session keeps SOCI's handle) when the reopening fails.
bool reopen(::soci::session& session, const std::string& path, int flags) {
  using namespace sqlite_api;  // where SOCI's sqlite3.h puts the C API
  auto* backend = static_cast<::soci::sqlite3_session_backend*>(session.get_backend());
  sqlite3* own = nullptr;
  if (sqlite3_open_v2(path.c_str(), &own, flags, nullptr) != SQLITE_OK) {
    sqlite3_close(own);  // a handle comes back even on failure, to say why
    return false;
  }
  sqlite3_close(backend->conn_);
  backend->conn_ = own;
  return true;
}

// `path` as the path of a file: URI (RFC 3986: what is not unreserved or
// '/', percent-encoded; a relative path stays relative).
std::string file_uri(const std::string& path) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri;
}

// Whether this process may make files beside `path` (SQLite's -shm and -wal).
bool directory_writable(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

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
    bad_url(url,
            "expected sqlite:///absolute/path.db (or sqlite:////absolute/path.db) or "
            "sqlite://relative/path.db");
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
      } else if (key == "migrate") {
        if (value != "none" && value != "add_columns") {
          bad_url(url, "migrate must be none or add_columns");
        }
        c.sink.migrate_add_columns = value == "add_columns";
      } else if (seal::is_url_option(key)) {
        // seal=, seal_key_file=, seal_anchor_file=: the skeleton's
        if (const auto why = seal::apply_url_option(c.sink.seal, key, value)) bad_url(url, *why);
      } else if (key == "synchronous") {
        std::string v = value;
        std::transform(v.begin(), v.end(), v.begin(), [](char ch) {
          return static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        });
        if (v != "NORMAL" && v != "FULL") bad_url(url, "synchronous must be normal or full");
        c.synchronous = v;
      } else if (key == "read_only") {
        if (value != "0" && value != "1") bad_url(url, "read_only must be 0 or 1");
        c.read_only = value == "1";
      } else if (key == "busy_timeout_ms") {
        const auto [p, ec] =
            std::from_chars(value.data(), value.data() + value.size(), c.busy_timeout_ms);
        if (ec != std::errc() || p != value.data() + value.size() || c.busy_timeout_ms < 0) {
          bad_url(url, "busy_timeout_ms must be a non-negative integer");
        }
      } else {
        bad_url(url,
                "unknown option '" + key +
                    "' (known: create_table, migrate, synchronous, busy_timeout_ms, read_only, "
                    "seal, seal_key_file, seal_anchor_file)");
      }
    }
  } catch (const error& e) {
    const std::string_view what = e.what();
    if (what.find("malformed SQLite URL") != std::string_view::npos) throw;
    bad_url(url, std::string(what));
  }
  if (const auto why = seal::contradiction(c.sink.seal, c.sink.migrate_add_columns)) {
    bad_url(url, *why);
  }
  // Two conventions meet here. auditpipe's (and most URL libraries'):
  // sqlite:///var/x.db is the absolute /var/x.db, sqlite://x.db relative.
  // SQLAlchemy's: sqlite:///x.db is relative, sqlite:////var/x.db absolute.
  // Four slashes are absolute in both, so they are taken. Three slashes
  // and one path component (sqlite:///x.db) is where they disagree in a
  // way that matters: a file in the root directory, which is almost always
  // SQLAlchemy's relative file; refused, with both spellings.
  if (c.path.size() > 1 && c.path[0] == '/' && c.path[1] == '/') c.path.erase(0, 1);
  if (!c.path.empty() && c.path[0] == '/' && c.path.find('/', 1) == std::string::npos &&
      rest.substr(0, 2) != "//") {
    const std::string name = c.path.substr(1);
    bad_url(url, "ambiguous: sqlite:///" + name + " is " + c.path +
                     " (a file in the root directory) here, but " + name +
                     " relative to the working directory in SQLAlchemy; write sqlite://" + name +
                     " for the relative file or sqlite:////" + name + " for " + c.path);
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

std::unique_ptr<SqliteConnection> open_connection(const SqliteConfig& config, Threading threading) {
  auto c = std::make_unique<SqliteConnection>();
  // SOCI's open creates a missing file: for a reader, a mistyped path
  // would become an empty database.
  if (config.read_only && ::access(config.path.c_str(), F_OK) != 0) {
    throw error("auditpipe: no SQLite database '" + config.path + "': " + std::strerror(errno) +
                " (read_only=1 opens an existing file)");
  }
  // Likewise for a writer told to make nothing: the table check then
  // refused the empty file, which stayed behind at the mistyped path.
  if (!config.sink.create_table && ::access(config.path.c_str(), F_OK) != 0) {
    throw error("auditpipe: SQLite database '" + config.path + "' does not exist (" +
                std::strerror(errno) +
                "; create_table=false makes neither the file nor the table)");
  }
  guard_sqlite_mutexes_across_fork();
  {
    OpenGate gate(config.path);  // refuses a file a parent had open at the fork
    try {
      c->session.open(::soci::sqlite3, config.path);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot open SQLite database '" + config.path + "': " + e.what() +
                  " (does the directory exist and is it writable?)");
    }
    c->open_file = gate.note();
  }
  const int threading_flag =
      threading == Threading::caller_serializes ? SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_FULLMUTEX;
  if (config.read_only) {
    // A write-ahead-log database in a directory this process may not write
    // (a copy on read-only media): SQLite makes its -shm beside the file
    // even to read, and every read failed ("attempt to write a readonly
    // database"). With no -shm beside it no connection has it open: it is
    // opened immutable, unless its -wal holds changes not yet in it, which
    // that would not see. A -shm there (a live writer whose directory this
    // reader may not write): SQLite reads through a -shm it may only read,
    // and an immutable open would read pages the writer is changing.
    std::string target = config.path;
    int flags = SQLITE_OPEN_READONLY | threading_flag;
    std::error_code shm_missing;
    if (!directory_writable(config.path) &&
        !std::filesystem::exists(config.path + "-shm", shm_missing)) {
      std::error_code ec;
      const auto wal = std::filesystem::file_size(config.path + "-wal", ec);
      if (!ec && wal > 0) {
        throw error("auditpipe: SQLite database '" + config.path +
                    "' has changes in its write-ahead log ('" + config.path +
                    "-wal') not yet in the file, and its directory cannot be written, so they "
                    "cannot be read: make a one-file copy (sqlite3 FILE \".backup COPY\"), or "
                    "read it where its directory is writable");
      }
      target = file_uri(config.path) + "?immutable=1";
      flags |= SQLITE_OPEN_URI;
    }
    if (!reopen(c->session, target, flags)) {
      throw error("auditpipe: cannot open SQLite database '" + config.path + "' read-only");
    }
  } else if (threading == Threading::caller_serializes) {
    reopen(c->session, config.path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | threading_flag);
  }
  auto* handle = static_cast<::soci::sqlite3_session_backend*>(c->session.get_backend())->conn_;
  c->handle = handle;
  // The busy timeout first: switching a new file to WAL takes a write
  // lock, and loggers opening the same file at once would otherwise get
  // SQLITE_BUSY ("database is locked") instead of waiting their turn.
  c->busy_timeout = std::chrono::milliseconds(config.busy_timeout_ms);
  sqlite3_busy_handler(handle, wait_while_busy, c.get());
  // SQLite opens a file it may not write read-only without a word; every
  // batch would then fail. Refused here, at construction, instead.
  c->path = config.path;
  if (config.read_only) return c;
  if (sqlite3_db_readonly(handle, "main") == 1) {
    throw error("auditpipe: SQLite database '" + config.path +
                "' is read-only for this process (file permissions or a read-only mount)");
  }
  std::string mode;
  // Switching to WAL is refused with SQLITE_BUSY at once, not after the
  // busy timeout, while another process holds the file in a way that would
  // deadlock (it is creating the table, or switching too).
  retry_while_busy(
      *c, [&] { c->session << "PRAGMA journal_mode=WAL", ::soci::into(mode); },
      [&](const std::exception& e, bool busy, std::chrono::milliseconds) {
        throw error("auditpipe: cannot switch SQLite database '" + config.path +
                    "' to WAL: " + e.what() +
                    (busy ? " (another process held it for longer than busy_timeout_ms)"
                          : " (is its directory writable?)"));
      });
  c->session << "PRAGMA synchronous=" + config.synchronous;
  return c;
}

std::vector<std::vector<std::optional<std::string>>> SqliteConnection::query_rows(
    std::string_view sql, const std::vector<std::string>& params) {
  using namespace sqlite_api;  // where SOCI's sqlite3.h puts the C API
  std::vector<std::vector<std::optional<std::string>>> out;
  sqlite3_stmt* st = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(handle, sql.data(), static_cast<int>(sql.size()), &st, &tail) !=
      SQLITE_OK) {
    throw error(std::string("SQLite error: ") + sqlite3_errmsg(handle));
  }
  // Finalized however this ends.
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owned(st, sqlite3_finalize);
  const std::string_view rest(tail, static_cast<std::size_t>(sql.data() + sql.size() - tail));
  if (rest.find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    throw error("auditpipe: one statement at a time (found more after the first)");
  }
  if (st == nullptr) return out;  // only whitespace or a comment
  const int count = sqlite3_bind_parameter_count(st);
  if (static_cast<std::size_t>(count) != params.size()) {
    throw error("auditpipe: the statement has " + std::to_string(count) + " placeholders (?) but " +
                std::to_string(params.size()) + " parameters were given");
  }
  for (int i = 0; i < count; ++i) {
    const std::string& p = params[static_cast<std::size_t>(i)];
    sqlite3_bind_text(st, i + 1, p.data(), static_cast<int>(p.size()), SQLITE_TRANSIENT);
  }
  while (true) {
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      throw error("SQLite error " + std::to_string(sqlite3_extended_errcode(handle)) + ": " +
                  sqlite3_errmsg(handle));
    }
    auto& values = out.emplace_back();
    values.reserve(static_cast<std::size_t>(sqlite3_column_count(st)));
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const int type = sqlite3_column_type(st, i);
      if (type == SQLITE_NULL) {
        values.emplace_back(std::nullopt);
      } else if (type == SQLITE_FLOAT) {
        // SQLite's own text of a REAL has 15 digits, and printf('%!.17g')
        // is not exact either above 1e100: the shortest text that gives
        // the double back exactly.
        char buf[32];
        const auto end = std::to_chars(buf, buf + sizeof buf, sqlite3_column_double(st, i)).ptr;
        values.emplace_back(std::string(buf, end));
      } else {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
        values.emplace_back(
            std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(st, i))));
      }
    }
  }
  return out;
}

std::vector<std::vector<std::string>> SqliteConnection::catalog_rows(std::string_view query,
                                                                     const std::string& table) {
  // Through query_rows() (SQLite's C API; `:table` is its one parameter),
  // not a SOCI rowset: describing a rowset's columns, Debian's SOCI 4.0
  // SQLite backend fills a map of type names that all its sessions share,
  // without a lock, so loggers opened at once from several threads raced
  // on it (ThreadSanitizer, in SqliteSink.LoggersOpenedAtOnceOnANewFileAllStart).
  std::vector<std::vector<std::string>> out;
  for (auto& row : query_rows(query, {table})) {
    std::vector<std::string>& values = out.emplace_back();
    // NULL as "" (a name, a type, a flag or a default's text each).
    for (auto& v : row) values.push_back(v ? std::move(*v) : std::string());
  }
  return out;
}

void SqliteConnection::execute_ddl(const std::string& sql) {
  // A statement refused as busy is tried again (CREATE TABLE IF NOT EXISTS
  // and the rest run before any batch: nothing of theirs is done when it is
  // refused). Seen once in CI: two loads started at once on one file, one
  // refused its CREATE TABLE with "database is locked", which did not say
  // how long it had waited; it now does.
  retry_while_busy(
      *this, [&] { session << sql; },
      [&](const std::exception& e, bool busy, std::chrono::milliseconds waited) {
        if (!busy) return;  // rethrown as it is
        throw error(std::string(e.what()) + " (another connection held the database locked for " +
                    std::to_string(waited.count()) +
                    " ms, busy_timeout_ms=" + std::to_string(busy_timeout.count()) + ")");
      });
}

bool SqliteConnection::file_moved() const {
  int moved = 0;
  return sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK &&
         moved != 0;
}

void SqliteConnection::cancel_io() noexcept {
  // The handle is fixed from open to close, and the skeleton never calls
  // this on a connection being closed.
  cancelled.store(true, std::memory_order_relaxed);  // a wait for a lock ends too
  if (handle != nullptr) sqlite3_interrupt(handle);
}

}  // namespace auditpipe::sqlite
