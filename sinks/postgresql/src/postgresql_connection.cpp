// The PostgreSQL URL as libpq's connection keywords, and
// PostgresqlConnection (postgresql_connection.h): the connect (each host in
// turn, cancellable, unreachable told from refused), its ping, the catalog
// queries and DDL of the table check.
#include "postgresql_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <string_view>

#include <spdlog/spdlog.h>

#include "auditpipe/diagnostics.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe::postgresql {

namespace {

// Masked whole: `why` may quote the URL's values, or a form whose words a
// password could equal.
[[noreturn]] void bad(const Url& url, const std::string& why) {
  throw url_error(url.masked("auditpipe: bad PostgreSQL URL '" + url.redacted() + "': " + why));
}

}  // namespace

PostgresqlConfig parse_postgresql_url(std::string_view text, UrlUse use) {
  const Url url = with_accepted_form(
      text,
      [&] {
        return parse_sink_url(
            text, url_schemes,
            {"write_path", "create_table", "migrate", "connect_timeout", "sslmode", "sslrootcert",
             "sslcert", "sslkey", "gssencmode", "application_name", "host", "port",
             "target_session_attrs", "seal", "seal_key_file", "seal_anchor_file", "password_file"},
            pool_option_names);
      },
      "postgresql://user:password@host:port[,host2:port2]/database?option=value (or postgres://)");
  if (url.user.empty()) bad(url, "no user name (postgresql://user:password@host/database)");
  if (url.path.empty()) bad(url, "no database name after the host");
  PostgresqlConfig c;
  c.sink.redacted_url = url.redacted();
  c.sink.table_location = "on " + c.sink.redacted_url;
  c.sink.pool.name = c.sink.redacted_url;
  // libpq's own spelling of a Unix socket: ?host=<socket directory> (or a
  // host name, or a list of either) with ?port=, for an empty host part.
  // Given both ways the URL is ambiguous (libpq would silently prefer the
  // option), so it is refused.
  const auto host_option = url.option("host");
  const auto port_option = url.option("port");
  constexpr const char* socket_form =
      "postgresql://user@/database?host=/run/postgresql&port=5432 for a socket directory, or "
      "postgresql://user:password@host:port/database";
  if (host_option && !url.hosts.empty()) {
    bad(url,
        std::string("a host both before the database and in ?host=: give one, ") + socket_form);
  }
  if (port_option && !host_option) {
    bad(url, std::string("?port= goes with ?host=; with a host before the database write "
                         "host:port (") +
                 socket_form + ")");
  }
  if (host_option) {
    const std::string port =
        port_option ? std::to_string(url_number(url, "port", *port_option, 1, 65535)) : "5432";
    std::string_view list = *host_option;
    while (true) {
      const auto comma = list.find(',');
      const std::string_view item = list.substr(0, comma);
      if (item.empty()) bad(url, std::string("an empty entry in ?host= (") + socket_form + ")");
      c.endpoints.push_back({std::string(item), port});
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  if (c.endpoints.empty() && url.hosts.empty()) {
    bad(url, std::string("no host (") + socket_form + ")");
  }
  for (const auto& h : url.hosts) {
    c.endpoints.push_back({h.host, std::to_string(h.port.value_or(5432))});
  }
  auto set = [&c](std::string keyword, std::string value) {
    c.keywords.push_back(std::move(keyword));
    c.values.push_back(std::move(value));
  };
  set("dbname", url.path);
  set("user", url.user);
  if (url.password) set("password", *url.password);
  std::string connect_timeout = "10", application_name = "auditpipe";
  // Only a read-write session is of use to a logger, with one host as with
  // several: libpq refuses a standby (or a primary not yet out of
  // recovery) at connect and the next host is tried. A reader wants that
  // with several hosts (a primary and its standbys); with one it takes
  // the server it was given: `auditpipe verify` on a replica.
  // c.endpoints holds the hosts of either spelling (before the database,
  // or ?host=).
  std::string target_session_attrs =
      use == UrlUse::write || c.endpoints.size() > 1 ? "read-write" : "any";
  for (const auto& [key, value] : url.query) {
    if (key == "write_path") {
      c.write_path = static_cast<WritePath>(url_choice(url, key, value, write_path_names));
    } else if (key == "create_table") {
      if (value != "true" && value != "false") bad(url, "create_table must be true or false");
      c.sink.create_table = value == "true";
    } else if (key == "migrate") {
      c.sink.migrate_add_columns = url_choice(url, key, value, migrate_names) == 1;
    } else if (seal::is_url_option(key)) {
      // seal=, seal_key_file=, seal_anchor_file=: the skeleton's
      if (const auto why = seal::apply_url_option(c.sink.seal, key, value)) bad(url, *why);
    } else if (key == "connect_timeout") {
      c.connect_timeout_s = static_cast<unsigned>(url_number(url, key, value, 1, 3600));
      connect_timeout = std::to_string(c.connect_timeout_s);
    } else if (key == "sslmode") {
      static constexpr std::string_view modes[] = {"disable", "allow",     "prefer",
                                                   "require", "verify-ca", "verify-full"};
      url_choice(url, key, value, modes);
      set("sslmode", value);
    } else if (key == "sslrootcert" || key == "sslcert" || key == "sslkey") {
      set(key, value);
    } else if (key == "gssencmode") {
      static constexpr std::string_view modes[] = {"disable", "prefer", "require"};
      url_choice(url, key, value, modes);
      set("gssencmode", value);
    } else if (key == "application_name") {
      application_name = value;
    } else if (key == "target_session_attrs") {
      // libpq's values (primary, standby, prefer-standby, read-only: libpq 14).
      static constexpr std::string_view attrs[] = {"any",     "read-write", "read-only",
                                                   "primary", "standby",    "prefer-standby"};
      url_choice(url, key, value, attrs);
      // These choose a standby (or a read-only session) whenever there is
      // one: every batch would be refused with 25006, for ever.
      if (use == UrlUse::write &&
          (value == "read-only" || value == "standby" || value == "prefer-standby")) {
        bad(url, "target_session_attrs=" + value +
                     " asks for a session that cannot write, and a logger only writes: use "
                     "read-write (the default), primary or any (the read-only values are for "
                     "readers such as auditpipe verify)");
      }
      target_session_attrs = value;
    } else if (key == "password_file") {
      set("password", password_from_file(url, value));
    } else if (key == "host" || key == "port") {
      // Read above, into the endpoints.
    } else {
      apply_pool_option(url, key, value, c.sink.pool, c.sink.pool_size);
    }
  }
  check_pool_options(url, c.sink.pool, c.sink.pool_size);
  // Files that would do nothing: whoever gave them believes them in force.
  if (const auto mode = url.option("sslmode"); mode && *mode == "disable") {
    for (const char* file : {"sslrootcert", "sslcert", "sslkey"}) {
      if (url.option(file)) {
        bad(url, std::string(file) +
                     " is given but sslmode=disable makes a plain connection: use "
                     "sslmode=verify-full (or verify-ca, require), or drop " +
                     file);
      }
    }
  }
  if (const auto why = seal::contradiction(c.sink.seal, c.sink.migrate_add_columns)) bad(url, *why);
  // GSS encryption off unless asked for (here, PGGSSENCMODE). libpq's
  // default, prefer, asks the Kerberos library for credentials at every
  // connect, and that library's global mutex, held by a pool's opener
  // thread at a fork(), hung a pre-forking server's worker for ever in its
  // own logger's first connect (a trial: 3 runs of about 50).
  // (A service file, PGSERVICE, may set it too.)
  if (!url.option("gssencmode") && std::getenv("PGGSSENCMODE") == nullptr &&
      std::getenv("PGSERVICE") == nullptr)
    set("gssencmode", "disable");
  set("connect_timeout", connect_timeout);
  c.target_session_attrs = target_session_attrs;
  set("target_session_attrs", target_session_attrs);
  set("application_name", application_name);
  set("client_encoding", "UTF8");
  return c;
}

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (message[i] != '\n') {
      out += message[i] == '\t' ? ' ' : message[i];
      continue;
    }
    std::size_t next = i + 1;
    while (next < message.size() && (message[next] == '\n' || message[next] == ' ')) ++next;
    if (next == message.size()) break;  // trailing newlines
    // An indented line continues the one before; any other is a message of its own.
    out += message[next] == '\t' ? " " : "; ";
    while (next < message.size() && message[next] == '\t') ++next;
    i = next - 1;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

PostgresqlError error_of(PGresult* r, PGconn* conn) {
  PostgresqlError e;
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  e.sqlstate = state ? state : "";
  e.message =
      one_line(r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn));
  return e;
}

std::string PostgresqlError::describe() const {
  return sqlstate.empty() ? message : "(" + sqlstate + ") " + message;
}

namespace {

// One host's connect attempt, and what it says about the server.
struct Attempt {
  PGconn* conn = nullptr;  // connected, or null
  std::string failure;
  bool unreachable = false;
  // It answered, but not with the session target_session_attrs asks for
  // (a standby, for read-write): counted as unreachable too.
  bool wrong_session = false;
};

// A writer's session (target_session_attrs=read-write or primary) is
// checked here, on a connection libpq made with any: a session libpq
// refuses comes with no SQLSTATE and a message that may be translated, and
// telling a standby from a wrong password by a second connect logged in
// twice. Returns "" if `conn` is what was asked for; otherwise why not, and
// in `configured` whether the server answered that it takes no writes
// though it is not in recovery (a setting, not a failover), where every
// other "no" (in recovery, no answer, gone) is unreachable for a writer.
std::string writer_session_problem(PGconn* conn, const std::string& wanted,
                                   const Cancellation& cancel,
                                   Cancellation::clock::time_point deadline, bool* configured) {
  *configured = false;
  if (PQsendQuery(conn,
                  "SELECT pg_catalog.pg_is_in_recovery(), "
                  "pg_catalog.current_setting('transaction_read_only')") != 1) {
    return one_line(PQerrorMessage(conn));
  }
  while (PQisBusy(conn) != 0) {
    short revents = 0;
    const Cancellation::Wait w = cancel.wait_for(PQsocket(conn), POLLIN, deadline, revents);
    if (w == Cancellation::Wait::cancelled) return "cancelled (close() ran out of time)";
    if (w == Cancellation::Wait::timed_out) return "no answer within connect_timeout";
    if (PQconsumeInput(conn) != 1) return one_line(PQerrorMessage(conn));
  }
  std::string problem;
  bool in_recovery = false, read_only = false;
  bool answered = false;
  while (PGresult* r = PQgetResult(conn)) {
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 2) {
      answered = true;
      in_recovery = std::string_view(PQgetvalue(r, 0, 0)) == "t";
      read_only = std::string_view(PQgetvalue(r, 0, 1)) == "on";
    } else if (problem.empty()) {
      problem = error_of(r, conn).describe();
    }
    PQclear(r);
  }
  if (!answered) return problem.empty() ? "no answer to the session check" : problem;
  if (in_recovery) {
    return "read-only now (a standby, or a server in recovery), refused by "
           "target_session_attrs=" +
           wanted;
  }
  if (read_only && wanted == "read-write") {
    *configured = true;
    return "takes no writes (transaction_read_only is on: default_transaction_read_only, set "
           "for the server, the database or the user) though it is not in recovery, refused by "
           "target_session_attrs=read-write";
  }
  return "";
}

Attempt connect_to(const PostgresqlConfig& config, const PostgresqlConfig::Endpoint& e,
                   const Cancellation& cancel) {
  const bool check_writer =
      config.target_session_attrs == "read-write" || config.target_session_attrs == "primary";
  std::vector<const char*> keywords{"host", "port"}, values{e.host.c_str(), e.port.c_str()};
  for (std::size_t i = 0; i < config.keywords.size(); ++i) {
    keywords.push_back(config.keywords[i].c_str());
    values.push_back(check_writer && config.keywords[i] == "target_session_attrs"
                         ? "any"
                         : config.values[i].c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  const auto deadline = Cancellation::clock::now() + std::chrono::seconds(config.connect_timeout_s);
  // expand_dbname = 0: the database name is a name, never a connection
  // string of its own.
  PGconn* conn = PQconnectStartParams(keywords.data(), values.data(), 0);
  if (conn == nullptr) throw error("auditpipe: out of memory creating a PostgreSQL connection");
  // Whether the socket ever connected: a server (or something) is there.
  bool connected = false;
  bool timed_out = false;
  PostgresPollingStatusType poll =
      PQstatus(conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (poll != PGRES_POLLING_OK && poll != PGRES_POLLING_FAILED) {
    const short events = poll == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    short revents = 0;
    // No socket (between two addresses of a host): nothing to wait for.
    const int fd = PQsocket(conn);
    const Cancellation::Wait w =
        fd < 0 ? (cancel.cancelled() ? Cancellation::Wait::cancelled : Cancellation::Wait::ready)
               : cancel.wait_for(fd, events, deadline, revents);
    if (w == Cancellation::Wait::cancelled) {
      PQfinish(conn);
      throw error("auditpipe: connecting to " + config.sink.redacted_url +
                  " cancelled (close() ran out of time)");
    }
    if (w == Cancellation::Wait::timed_out) {
      timed_out = true;
      break;
    }
    poll = PQconnectPoll(conn);
    const ConnStatusType status = PQstatus(conn);
    if (status != CONNECTION_STARTED && status != CONNECTION_NEEDED && status != CONNECTION_BAD)
      connected = true;
  }
  Attempt a;
  if (poll == PGRES_POLLING_OK) {
    if (!check_writer) {
      a.conn = conn;
      return a;
    }
    bool configured = false;
    const std::string problem =
        writer_session_problem(conn, config.target_session_attrs, cancel, deadline, &configured);
    if (problem.empty()) {
      a.conn = conn;
      return a;
    }
    PQfinish(conn);
    if (cancel.cancelled()) {
      throw error("auditpipe: connecting to " + config.sink.redacted_url +
                  " cancelled (close() ran out of time)");
    }
    a.failure = problem;
    // A standby is up, but no writer's host until it is promoted: counted
    // as unreachable (and tried last for a while), so a logger with
    // somewhere to keep records starts and waits; so is a check that got
    // no answer. A server not in recovery that takes no writes is
    // configured so: an error, said as such.
    a.wrong_session = !configured;
    a.unreachable = !configured;
    return a;
  }
  a.failure =
      timed_out
          ? "no answer within connect_timeout=" + std::to_string(config.connect_timeout_s) + "s"
          : one_line(PQerrorMessage(conn));
  PQfinish(conn);
  a.unreachable = true;
  if (!timed_out && connected) {
    // The socket connected and then the attempt failed: the server may have
    // answered (a wrong password, an unknown database: a configuration
    // error) or gone away. libpq keeps the server's SQLSTATE of a failed
    // connect to itself; PQping reads it: only "no response" and "not
    // accepting connections now" (starting up, shutting down) are
    // unreachable. Without TLS requirements, so that a TLS mismatch counts
    // as a server that answered; and without any password (not the URL's,
    // PGPASSWORD's or a password file's): a server asking for one has
    // answered, and logging in again would log a second failed login (a
    // lockout policy counts them).
    std::vector<const char*> ping_keywords, ping_values;
    for (std::size_t i = 0; keywords[i] != nullptr; ++i) {
      const std::string_view keyword = keywords[i];
      if (keyword.rfind("ssl", 0) == 0 || keyword == "password" || keyword == "passfile") continue;
      ping_keywords.push_back(keywords[i]);
      ping_values.push_back(values[i]);
    }
    ping_keywords.push_back("password");
    ping_values.push_back("");
    // A path that cannot exist: libpq passes over a missing password file
    // silently, but warns on stderr of one that is not a plain file
    // (/dev/null), which read as a misconfigured password file.
    ping_keywords.push_back("passfile");
    ping_values.push_back("/proc/self/no-password-file");
    ping_keywords.push_back(nullptr);
    ping_values.push_back(nullptr);
    const PGPing ping = PQpingParams(ping_keywords.data(), ping_values.data(), 0);
    a.unreachable = ping == PQPING_NO_RESPONSE || ping == PQPING_REJECT;
  }
  return a;
}

}  // namespace

PostgresqlConnection::PostgresqlConnection(const PostgresqlConfig& config,
                                           const Cancellation& cancel, HostHealth* health) {
  std::string failures;
  bool answered = false;
  for (const std::size_t index : HostHealth::order_of(health, config.endpoints.size())) {
    const PostgresqlConfig::Endpoint& e = config.endpoints[index];
    if (cancel.cancelled()) {
      throw error("auditpipe: connecting to " + config.sink.redacted_url +
                  " cancelled (close() ran out of time)");
    }
    Attempt a = connect_to(config, e, cancel);
    if (a.conn != nullptr) {
      // (Not HostHealth::good(): an avoided host stays last until its time
      // runs out, as this connect may have begun before another writer
      // found it read-only.)
      conn_ = a.conn;
      socket_ = PQsocket(conn_);
      endpoint_ = e;
      endpoint_index_ = index;
      // The server's notices go to the diagnostics logger instead of libpq's
      // default, stderr, so that a tool's output stays its own: warnings as
      // warnings, the rest ("table ... does not exist, skipping") at debug.
      PQsetNoticeProcessor(
          conn_,
          [](void*, const char* message) {
            const std::string text = one_line(message);
            if (text.rfind("WARNING", 0) == 0) {
              diagnostics()->warn("auditpipe: PostgreSQL: {}", text);
            } else {
              diagnostics()->debug("auditpipe: PostgreSQL: {}", text);
            }
          },
          nullptr);
      return;
    }
    if (!a.unreachable) answered = true;
    if (a.wrong_session && health != nullptr) health->avoid(index);
    failures += (failures.empty() ? "" : "; ") + e.describe() + ": " + a.failure;
  }
  const std::string message =
      "auditpipe: cannot connect to " + config.sink.redacted_url + ": " + failures;
  if (!answered) throw unreachable(message);
  throw error(message);
}

void PostgresqlConnection::cancel_io() noexcept {
  if (socket_ >= 0) shutdown(socket_, SHUT_RDWR);
}

bool PostgresqlConnection::ping() noexcept {
  PGresult* r = PQexec(conn_, "");
  const bool ok = r != nullptr && PQresultStatus(r) == PGRES_EMPTY_QUERY;
  PQclear(r);
  return ok;
}

std::vector<std::vector<std::string>> PostgresqlConnection::catalog_rows(std::string_view query,
                                                                         const std::string& table) {
  const std::string sql(query);
  const char* param = table.c_str();
  PGresult* r = PQexecParams(conn_, sql.c_str(), 1, nullptr, &param, nullptr, nullptr, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    const PostgresqlError e = error_of(r, conn_);
    PQclear(r);
    throw error(e.describe());
  }
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(PQntuples(r)));
  for (int row = 0; row < PQntuples(r); ++row) {
    for (int col = 0; col < PQnfields(r); ++col) {
      out[static_cast<std::size_t>(row)].emplace_back(
          PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col)));
    }
  }
  PQclear(r);
  return out;
}

std::vector<std::vector<std::optional<std::string>>> PostgresqlConnection::query_rows(
    std::string_view sql, const std::vector<std::string>& parameters) {
  const std::vector<std::size_t> marks = sql_placeholders(sql, false);
  if (marks.size() != parameters.size()) {
    throw error("auditpipe: the statement has " + std::to_string(marks.size()) +
                " placeholders (?) but " + std::to_string(parameters.size()) +
                " parameters were given");
  }
  std::string text;
  std::size_t from = 0;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    text.append(sql.substr(from, marks[i] - from));
    text += "$" + std::to_string(i + 1);
    from = marks[i] + 1;
  }
  text.append(sql.substr(from));
  std::vector<const char*> values;
  for (const std::string& p : parameters) values.push_back(p.c_str());
  PGresult* r = PQexecParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0);
  const ExecStatusType status = PQresultStatus(r);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    const PostgresqlError e = error_of(r, conn_);
    PQclear(r);
    throw error(e.describe());
  }
  std::vector<std::vector<std::optional<std::string>>> out(static_cast<std::size_t>(PQntuples(r)));
  for (int row = 0; row < PQntuples(r); ++row) {
    out[static_cast<std::size_t>(row)].reserve(static_cast<std::size_t>(PQnfields(r)));
    for (int col = 0; col < PQnfields(r); ++col) {
      auto& values_out = out[static_cast<std::size_t>(row)];
      if (PQgetisnull(r, row, col)) {
        values_out.emplace_back(std::nullopt);
      } else {
        values_out.emplace_back(std::string(PQgetvalue(r, row, col),
                                            static_cast<std::size_t>(PQgetlength(r, row, col))));
      }
    }
  }
  PQclear(r);
  return out;
}

void PostgresqlConnection::execute_ddl(const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    const PostgresqlError e = error_of(r, conn_);
    PQclear(r);
    throw error(e.describe());
  }
  PQclear(r);
}

}  // namespace auditpipe::postgresql
