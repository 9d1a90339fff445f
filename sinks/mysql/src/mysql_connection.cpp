// MysqlConnection (mysql_connection.h): connecting with failover on the
// non-blocking API, the session set up once, and the catalog queries and
// DDL of the table check.
#include "mysql_connection.h"

#include <mysql.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <mutex>
#include <utility>

#include "auditpipe/status.h"

namespace auditpipe::mysql {

namespace {

// Strict: a value a column cannot hold is an error, never a silent
// conversion. Set once per connection, by the client at connect.
constexpr const char* session_setup =
    "SET SESSION sql_mode = 'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ZERO_DATE,"
    "NO_ZERO_IN_DATE,NO_ENGINE_SUBSTITUTION'";

// mysql_init() is only thread-safe once the library is initialized. Done as
// this library loads, before any thread of the program can fork: a child
// forked while another thread was inside a once-only initialization waits
// for ever for it at its own first connect. The initialization also
// ignores SIGPIPE for the whole process (a TLS write to a closed socket
// would kill it): at load that reached every program linking the sink,
// SQLite-only ones and `auditpipe ... | head` included, so the disposition
// is put back here and set at the first connect, as before.
int initialize_library() {
  struct sigaction before {};
  sigaction(SIGPIPE, nullptr, &before);
  const int rc = mysql_library_init(0, nullptr, nullptr);
  sigaction(SIGPIPE, &before, nullptr);
  return rc;
}
const int library_initialized_at_load = initialize_library();
std::atomic<bool> sigpipe_ignored{false};

void library_init() {
  if (library_initialized_at_load != 0) {
    throw error(
        "auditpipe: the MySQL client library could not be initialized (mysql_library_init "
        "returned " +
        std::to_string(library_initialized_at_load) + ")");
  }
  if (!sigpipe_ignored.exchange(true)) std::signal(SIGPIPE, SIG_IGN);
}

void set_options(MYSQL* m, const MysqlConfig& c, const MysqlEndpoint& e, bool local_infile) {
  const unsigned connect_timeout = c.connect_timeout_s, read_timeout = c.read_timeout_s,
                 write_timeout = c.write_timeout_s;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, c.charset.c_str());
  mysql_options(m, MYSQL_INIT_COMMAND, session_setup);
  // A silent reconnect would lose the session setup; the pool replaces
  // broken connections instead.
  const my_bool no = 0;
  mysql_options(m, MYSQL_OPT_RECONNECT, &no);
  const unsigned infile = local_infile ? 1 : 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &infile);
  const unsigned protocol = e.socket.empty() ? MYSQL_PROTOCOL_TCP : MYSQL_PROTOCOL_SOCKET;
  mysql_options(m, MYSQL_OPT_PROTOCOL, &protocol);
  if (c.tls != TlsMode::disabled) {
    const my_bool yes = 1;
    mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &yes);
    // Connector/C checks the certificate's chain against a CA it is given
    // (verify_ca needs one), and the host name only under this option: set
    // for verify_ca too, a host reached by a name its certificate does not
    // list was refused, as under verify_identity.
    const my_bool verify = c.tls == TlsMode::verify_identity;
    mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    if (!c.tls_ca.empty()) mysql_options(m, MYSQL_OPT_SSL_CA, c.tls_ca.c_str());
    if (!c.tls_cert.empty()) mysql_options(m, MYSQL_OPT_SSL_CERT, c.tls_cert.c_str());
    if (!c.tls_key.empty()) mysql_options(m, MYSQL_OPT_SSL_KEY, c.tls_key.c_str());
  }
}

MysqlError error_of(MYSQL* m) {
  return MysqlError{mysql_errno(m), mysql_sqlstate(m), mysql_error(m)};
}

// The non-blocking connect's own stack (the library's default is 60 KiB):
// room for name resolution and TLS set-up inside it.
constexpr std::size_t connect_stack_size = 256 * 1024;

// One call of the non-blocking API to its end: `start()` and `cont(events)`
// are the call's _start and _cont functions, returning what the library
// waits for. Each wait goes through `cancel`; once cancelled, every wait is
// reported to the library as timed out, so the call fails at once and
// cleans up after itself (the handle is never freed in the middle of it).
// The library's own timeouts (connect_timeout, read_timeout) still apply:
// true if one of them ended a wait.
template <class Start, class Cont>
bool run_nonblocking(MYSQL* m, const Cancellation& cancel, Start start, Cont cont) {
  bool library_timeout = false;
  int status = start();
  while (status != 0) {
    short events = 0;
    if (status & MYSQL_WAIT_READ) events |= POLLIN;
    if (status & MYSQL_WAIT_WRITE) events |= POLLOUT;
    if (status & MYSQL_WAIT_EXCEPT) events |= POLLPRI;
    const auto deadline =
        status & MYSQL_WAIT_TIMEOUT
            ? Cancellation::clock::now() + std::chrono::milliseconds(mysql_get_timeout_value_ms(m))
            : Cancellation::clock::time_point::max();
    short revents = 0;
    int happened = 0;
    switch (cancel.wait_for(events != 0 ? static_cast<int>(mysql_get_socket(m)) : -1, events,
                            deadline, revents)) {
      case Cancellation::Wait::ready:
        if (revents & (POLLIN | POLLHUP | POLLERR)) happened |= status & MYSQL_WAIT_READ;
        if (revents & (POLLOUT | POLLHUP | POLLERR)) happened |= status & MYSQL_WAIT_WRITE;
        if (revents & POLLPRI) happened |= MYSQL_WAIT_EXCEPT;
        if (happened == 0) happened = status & ~MYSQL_WAIT_TIMEOUT;
        break;
      case Cancellation::Wait::timed_out:
        library_timeout = true;
        happened = MYSQL_WAIT_TIMEOUT;
        break;
      case Cancellation::Wait::cancelled:
        happened = MYSQL_WAIT_TIMEOUT;
        break;
    }
    status = cont(happened);
  }
  return library_timeout;
}

// mysql_real_connect(), cancellable. True if connected; `timed_out` tells
// whether connect_timeout ended a wait.
bool connect_nonblocking(MYSQL* m, const MysqlConfig& c, const MysqlEndpoint& e,
                         const Cancellation& cancel, bool& timed_out) {
  MYSQL* connected = nullptr;
  timed_out = run_nonblocking(
      m, cancel,
      [&] {
        return mysql_real_connect_start(&connected, m,
                                        e.socket.empty() ? e.host.c_str() : "localhost",
                                        c.user.c_str(), c.password.c_str(), c.database.c_str(),
                                        e.port, e.socket.empty() ? nullptr : e.socket.c_str(), 0);
      },
      [&](int events) { return mysql_real_connect_cont(&connected, m, events); });
  return connected != nullptr;
}

// The two columns of every row of a SHOW statement's result (the name in
// lower case, the value); frees `r`.
std::vector<std::pair<std::string, std::string>> pairs_of(MYSQL_RES* r) {
  std::vector<std::pair<std::string, std::string>> out;
  if (mysql_num_fields(r) >= 2) {
    while (MYSQL_ROW row = mysql_fetch_row(r)) {
      const unsigned long* lengths = mysql_fetch_lengths(r);
      std::string name(row[0] ? row[0] : "", row[0] ? lengths[0] : 0);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      out.emplace_back(std::move(name), std::string(row[1] ? row[1] : "", row[1] ? lengths[1] : 0));
    }
  }
  mysql_free_result(r);
  return out;
}

// The two columns of every row of a SHOW statement (name, value),
// cancellable; nullopt if it failed (the error stays on `m`).
std::optional<std::vector<std::pair<std::string, std::string>>> query_pairs_nonblocking(
    MYSQL* m, std::string_view sql, const Cancellation& cancel) {
  int failed = 0;
  run_nonblocking(
      m, cancel, [&] { return mysql_real_query_start(&failed, m, sql.data(), sql.size()); },
      [&](int events) { return mysql_real_query_cont(&failed, m, events); });
  if (failed != 0) return std::nullopt;
  MYSQL_RES* r = nullptr;
  run_nonblocking(
      m, cancel, [&] { return mysql_store_result_start(&r, m); },
      [&](int events) { return mysql_store_result_cont(&r, m, events); });
  if (r == nullptr) return std::nullopt;
  return pairs_of(r);
}

std::string value_of(const std::vector<std::pair<std::string, std::string>>& pairs,
                     std::string_view name) {
  for (const auto& [n, v] : pairs) {
    if (n == name) return v;
  }
  return {};
}

std::size_t number_or_zero(const std::string& text) {
  try {
    return text.empty() ? 0 : static_cast<std::size_t>(std::stoull(text));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::unique_ptr<MysqlConnection> MysqlConnection::connect(const MysqlConfig& c, bool local_infile,
                                                          const Cancellation& cancel,
                                                          HostHealth* health) {
  library_init();
  std::string failures;
  bool answered = false;  // some endpoint's server said why it refused
  for (const std::size_t index : HostHealth::order_of(health, c.endpoints.size())) {
    const MysqlEndpoint& e = c.endpoints[index];
    if (cancel.cancelled()) {
      throw error("auditpipe: connecting to " + c.sink.redacted_url +
                  " cancelled (close() ran out of time)");
    }
    MYSQL* m = mysql_init(nullptr);
    if (m == nullptr) throw error("auditpipe: out of memory creating a MySQL connection");
    set_options(m, c, e, local_infile);
    mysql_options(m, MYSQL_OPT_NONBLOCK, &connect_stack_size);
    bool timed_out = false;
    if (connect_nonblocking(m, c, e, cancel, timed_out)) {
      auto connection = std::unique_ptr<MysqlConnection>(new MysqlConnection(m, e, c.password));
      connection->endpoint_index_ = index;
      // SHOW works on a Galera node outside the primary component (a
      // SELECT would fail there with 1047), and on servers without wsrep
      // (no rows).
      const auto variables = query_pairs_nonblocking(
          m,
          "SHOW VARIABLES WHERE Variable_name IN ('max_allowed_packet', 'wsrep_on', "
          "'wsrep_max_ws_rows', 'wsrep_max_ws_size')",
          cancel);
      if (!variables || value_of(*variables, "max_allowed_packet").empty()) {
        const MysqlError failure = connection->last_error();
        if (health != nullptr) health->avoid(index);
        if (is_connection_error(failure.code)) {
          failures += (failures.empty() ? "" : "; ") + e.describe() + ": " + failure.describe();
          continue;  // gone while asked: the next host
        }
        throw error(c.hide_password("auditpipe: connected to " + e.describe() +
                                    " but cannot read max_allowed_packet: " + failure.describe()));
      }
      connection->max_allowed_packet_ = number_or_zero(value_of(*variables, "max_allowed_packet"));
      std::string refused;
      if (value_of(*variables, "wsrep_on") == "ON") {
        connection->galera_ = true;
        connection->max_ws_rows_ = number_or_zero(value_of(*variables, "wsrep_max_ws_rows"));
        connection->max_ws_size_ = number_or_zero(value_of(*variables, "wsrep_max_ws_size"));
        const auto status = query_pairs_nonblocking(
            m,
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state', "
            "'wsrep_local_state_comment', 'wsrep_cluster_conf_id')",
            cancel);
        if (!status) {
          refused = "cannot read its wsrep status: " + connection->last_error().describe();
        } else if (value_of(*status, "wsrep_ready") != "ON" ||
                   value_of(*status, "wsrep_local_state") != "4") {
          refused =
              "Galera node not ready for writes (wsrep_ready=" + value_of(*status, "wsrep_ready") +
              ", wsrep_local_state=" + value_of(*status, "wsrep_local_state") + " " +
              value_of(*status, "wsrep_local_state_comment") + ", not 4 Synced)";
        } else {
          connection->conf_id_ = value_of(*status, "wsrep_cluster_conf_id");
        }
      }
      if (refused.empty()) {
        if (health != nullptr) health->good(index);
        return connection;
      }
      // Like a host that does not answer: a cluster that lost its quorum
      // is an outage, not a configuration error.
      if (health != nullptr) health->avoid(index);
      failures += (failures.empty() ? "" : "; ") + e.describe() + ": " + refused;
      continue;
    }
    const MysqlError failure = error_of(m);
    if (!is_unreachable_error(failure.code)) answered = true;
    if (health != nullptr) health->avoid(index);
    failures += (failures.empty() ? "" : "; ") + e.describe() + ": " + failure.describe();
    // The library names the timeout only by the system error (EAGAIN: 11).
    if (timed_out && !cancel.cancelled()) {
      failures += " (no answer within connect_timeout=" + std::to_string(c.connect_timeout_s) +
                  " s: the server is paused, hung or overloaded, or not a MySQL server, or a "
                  "network drops the packets)";
    }
    mysql_close(m);
  }
  const std::string message =
      c.hide_password("auditpipe: cannot connect to " + c.sink.redacted_url + ": " + failures);
  if (!answered) throw unreachable(message);
  throw error(message);
}

MysqlConnection::MysqlConnection(MYSQL* mysql, MysqlEndpoint endpoint, std::string password)
    : mysql_(mysql),
      socket_(static_cast<int>(mysql_get_socket(mysql))),
      endpoint_(std::move(endpoint)),
      password_(std::move(password)) {
  // MariaDB servers announce bulk execution in their extended
  // capabilities; MySQL servers do not have it.
  unsigned long long capabilities = 0;
  if (mariadb_get_infov(mysql_, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &capabilities) ==
      0) {
    unsigned long server = 0;
    mariadb_get_infov(mysql_, MARIADB_CONNECTION_SERVER_CAPABILITIES, &server);
    const bool is_mysql = (server & CLIENT_MYSQL) != 0;
    bulk_supported_ =
        !is_mysql && (capabilities & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0;
  }
}

MysqlConnection::~MysqlConnection() {
  path_state.reset();  // statements close before their connection
  mysql_close(mysql_);
}

void MysqlConnection::cancel_io() noexcept {
  if (socket_ >= 0) shutdown(socket_, SHUT_RDWR);
}

bool MysqlConnection::ping() noexcept {
  return mysql_ping(mysql_) == 0;
}

std::optional<MysqlError> MysqlConnection::execute(std::string_view sql) noexcept {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return last_error();
  // Read before the results are drained: draining sets it to -1.
  affected_ = mysql_affected_rows(mysql_);
  // Drain every result (a statement may produce one); none is needed.
  do {
    if (MYSQL_RES* r = mysql_store_result(mysql_)) mysql_free_result(r);
  } while (mysql_next_result(mysql_) == 0);
  if (mysql_errno(mysql_) != 0) return last_error();
  return std::nullopt;
}

std::optional<std::string> MysqlConnection::query_value(std::string_view sql) noexcept {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return std::nullopt;
  MYSQL_RES* r = mysql_store_result(mysql_);
  if (r == nullptr) return std::nullopt;
  std::optional<std::string> value;
  if (MYSQL_ROW row = mysql_fetch_row(r); row != nullptr && row[0] != nullptr) {
    const unsigned long* lengths = mysql_fetch_lengths(r);
    value.emplace(row[0], lengths[0]);
  }
  mysql_free_result(r);
  return value;
}

std::optional<std::string> MysqlConnection::galera_write_doubt() {
  static constexpr std::string_view sql =
      "SHOW STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_conf_id')";
  std::vector<std::pair<std::string, std::string>> status;
  if (mysql_real_query(mysql_, sql.data(), sql.size()) == 0) {
    if (MYSQL_RES* r = mysql_store_result(mysql_)) status = pairs_of(r);
  }
  const std::string ready = value_of(status, "wsrep_ready");
  if (ready != "ON") {
    return "the node left the primary component during the write (wsrep_ready=" +
           (ready.empty() ? last_error().describe() : ready) + " after it)";
  }
  const std::string conf_id = value_of(status, "wsrep_cluster_conf_id");
  if (conf_id != conf_id_) {
    std::string doubt =
        "the cluster's membership changed during the write (wsrep_cluster_conf_id " + conf_id_ +
        " -> " + conf_id + ")";
    conf_id_ = conf_id;
    return doubt;
  }
  return std::nullopt;
}

MysqlError MysqlConnection::last_error() const {
  MysqlError e = error_of(mysql_);
  e.message = hide_password(std::move(e.message));
  return e;
}

std::string MysqlConnection::hide_password(std::string text) const {
  return hide_secret(std::move(text), password_);
}

// The query's one `?` becomes the table name as an escaped string literal.
std::vector<std::vector<std::string>> MysqlConnection::catalog_rows(std::string_view query,
                                                                    const std::string& table) {
  std::string literal(table.size() * 2 + 1, '\0');
  literal.resize(mysql_real_escape_string(mysql_, literal.data(), table.data(), table.size()));
  std::string sql(query);
  sql.replace(sql.find('?'), 1, "'" + literal + "'");
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) throw error(last_error().describe());
  MYSQL_RES* r = mysql_store_result(mysql_);
  if (r == nullptr) throw error(last_error().describe());
  std::vector<std::vector<std::string>> out;
  const unsigned fields = mysql_num_fields(r);
  while (MYSQL_ROW row = mysql_fetch_row(r)) {
    const unsigned long* lengths = mysql_fetch_lengths(r);
    std::vector<std::string>& values = out.emplace_back();
    for (unsigned i = 0; i < fields; ++i)
      values.emplace_back(row[i] ? row[i] : "", row[i] ? lengths[i] : 0);
  }
  mysql_free_result(r);
  return out;
}

std::string MysqlConnection::bound(std::string_view sql, const std::vector<std::string>& params) {
  const std::vector<std::size_t> marks = sql_placeholders(sql, true);
  if (marks.size() != params.size()) {
    throw error("auditpipe: the statement has " + std::to_string(marks.size()) +
                " placeholders (?) but " + std::to_string(params.size()) +
                " parameters were given");
  }
  std::string text;
  std::size_t from = 0;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    text.append(sql.substr(from, marks[i] - from));
    const std::string& value = params[i];
    // Plain ASCII with nothing to escape (numbers, hex digests, a seal's
    // ranges and fingerprints: tens of KiB) is copied as it is:
    // mysql_real_escape_string() checks every byte against the charset.
    // Bytes of 0x80 and up always go through it (a multi-byte charset may
    // hide a quote in one).
    if (std::all_of(value.begin(), value.end(), [](char ch) {
          const auto u = static_cast<unsigned char>(ch);
          return u >= 0x20 && u < 0x7f && ch != '\'' && ch != '\\' && ch != '"';
        })) {
      text += '\'';
      text += value;
      text += '\'';
      from = marks[i] + 1;
      continue;
    }
    const std::size_t start = text.size();
    text.resize(start + value.size() * 2 + 3);
    text[start] = '\'';
    const unsigned long n =
        mysql_real_escape_string(mysql_, text.data() + start + 1, value.data(), value.size());
    text.resize(start + 1 + n);
    text += '\'';
    from = marks[i] + 1;
  }
  text.append(sql.substr(from));
  return text;
}

void MysqlConnection::query_each(std::string_view sql, const std::vector<std::string>& params,
                                 const RowCallback& on_row) {
  const std::string text = bound(sql, params);
  if (mysql_real_query(mysql_, text.data(), text.size()) != 0) throw error(last_error().describe());
  // Streamed: rows are read from the socket as they are handed on, so a
  // whole table never sits in memory.
  MYSQL_RES* r = mysql_use_result(mysql_);
  if (r == nullptr) {
    if (mysql_field_count(mysql_) != 0) throw error(last_error().describe());
    return;
  }
  struct Free {
    MYSQL_RES* r;
    ~Free() { mysql_free_result(r); }  // reads what is left, if on_row threw
  } free_result{r};
  const unsigned fields = mysql_num_fields(r);
  std::vector<std::optional<std::string_view>> values(fields);
  while (MYSQL_ROW row = mysql_fetch_row(r)) {
    const unsigned long* lengths = mysql_fetch_lengths(r);
    for (unsigned i = 0; i < fields; ++i) {
      values[i] = row[i] == nullptr
                      ? std::nullopt
                      : std::optional<std::string_view>(std::in_place, row[i], lengths[i]);
    }
    on_row(values);
  }
  if (mysql_errno(mysql_) != 0) throw error(last_error().describe());
}

std::vector<std::vector<std::optional<std::string>>> MysqlConnection::query_rows(
    std::string_view sql, const std::vector<std::string>& params) {
  const std::string text = bound(sql, params);
  if (mysql_real_query(mysql_, text.data(), text.size()) != 0) throw error(last_error().describe());
  std::vector<std::vector<std::optional<std::string>>> out;
  MYSQL_RES* r = mysql_store_result(mysql_);
  if (r == nullptr) {
    if (mysql_field_count(mysql_) != 0) throw error(last_error().describe());
    return out;
  }
  const unsigned fields = mysql_num_fields(r);
  // Sized once: growing each row's vector column by column cost verify
  // (20,000-row pages) several allocations per row.
  out.reserve(static_cast<std::size_t>(mysql_num_rows(r)));
  while (MYSQL_ROW row = mysql_fetch_row(r)) {
    const unsigned long* lengths = mysql_fetch_lengths(r);
    auto& values = out.emplace_back();
    values.reserve(fields);
    for (unsigned i = 0; i < fields; ++i) {
      if (row[i] == nullptr) {
        values.emplace_back(std::nullopt);
      } else {
        values.emplace_back(std::string(row[i], lengths[i]));
      }
    }
  }
  mysql_free_result(r);
  return out;
}

void MysqlConnection::execute_ddl(const std::string& sql) {
  if (const auto e = execute(sql)) throw error(e->describe());
}

}  // namespace auditpipe::mysql
