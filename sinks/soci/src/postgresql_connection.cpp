#include "postgresql_connection.h"

#include <algorithm>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe::soci_sink {

namespace {

[[noreturn]] void bad(const Url& url, const std::string& why) {
  throw error("auditpipe: bad PostgreSQL URL '" + url.redacted() + "': " + why);
}

// A libpq connection-string value: quoted, with ' and \ escaped.
std::string conninfo_value(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

PostgresConfig parse_postgres_url(std::string_view text) {
  const Url url = parse_url(text);
  if (url.scheme != "postgresql" && url.scheme != "postgres") {
    bad(url, "the scheme must be postgresql:// (or postgres://), not " + url.scheme + "://");
  }
  require_known_options(
      url,
      {"write_path", "create_table", "connect_timeout", "sslmode", "sslrootcert", "sslcert",
       "sslkey", "application_name", "pool_size", "min_idle", "connection_timeout_ms",
       "idle_timeout_ms", "max_lifetime_ms", "keepalive_ms", "validation_ms", "leak_detection_ms"});
  if (url.user.empty()) bad(url, "no user name (postgresql://user:password@host/database)");
  if (url.path.empty()) bad(url, "no database name after the host");
  if (url.hosts.empty()) bad(url, "no host");
  PostgresConfig c;
  c.sink.redacted_url = url.redacted();
  c.sink.table_location = "on " + c.sink.redacted_url;
  c.sink.pool.name = c.sink.redacted_url;
  std::string hosts, ports;
  for (const auto& h : url.hosts) {
    hosts += (hosts.empty() ? "" : ",") + h.host;
    ports += (ports.empty() ? "" : ",") + std::to_string(h.port.value_or(5432));
  }
  c.conninfo = "host=" + conninfo_value(hosts) + " port=" + conninfo_value(ports) +
               " dbname=" + conninfo_value(url.path) + " user=" + conninfo_value(url.user);
  if (url.password) c.conninfo += " password=" + conninfo_value(*url.password);
  std::string connect_timeout = "10", application_name = "auditpipe";
  for (const auto& [key, value] : url.query) {
    if (key == "write_path") {
      if (value == "auto")
        c.write_path = PostgresWritePath::automatic;
      else if (value == "copy")
        c.write_path = PostgresWritePath::copy;
      else if (value == "insert")
        c.write_path = PostgresWritePath::insert;
      else
        bad(url, "write_path must be auto, copy or insert, not '" + value + "'");
    } else if (key == "create_table") {
      if (value != "true" && value != "false") bad(url, "create_table must be true or false");
      c.sink.create_table = value == "true";
    } else if (key == "connect_timeout") {
      connect_timeout = std::to_string(url_number(url, key, value, 1, 3600));
    } else if (key == "sslmode") {
      static const char* const modes[] = {"disable", "allow",     "prefer",
                                          "require", "verify-ca", "verify-full"};
      if (std::find(std::begin(modes), std::end(modes), value) == std::end(modes)) {
        bad(url, "sslmode must be disable, allow, prefer, require, verify-ca or verify-full");
      }
      c.conninfo += " sslmode=" + conninfo_value(value);
    } else if (key == "sslrootcert" || key == "sslcert" || key == "sslkey") {
      c.conninfo += " " + key + "=" + conninfo_value(value);
    } else if (key == "application_name") {
      application_name = value;
    } else {
      apply_pool_option(url, key, value, c.sink.pool, c.sink.pool_size);
    }
  }
  c.conninfo += " connect_timeout=" + conninfo_value(connect_timeout) +
                " application_name=" + conninfo_value(application_name) + " client_encoding='UTF8'";
  return c;
}

std::string PostgresError::describe() const {
  return sqlstate.empty() ? message : "(" + sqlstate + ") " + message;
}

PostgresConnection::PostgresConnection(const PostgresConfig& config) {
  try {
    session_.open(::soci::postgresql, config.conninfo);
  } catch (const std::exception& e) {
    std::string message = e.what();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
      message.pop_back();
    throw error("auditpipe: cannot connect to " + config.sink.redacted_url + ": " + message);
  }
  conn_ = static_cast<::soci::postgresql_session_backend*>(session_.get_backend())->conn_;
}

bool PostgresConnection::ping() noexcept {
  PGresult* r = PQexec(conn_, "");
  const bool ok = r != nullptr && PQresultStatus(r) == PGRES_EMPTY_QUERY;
  PQclear(r);
  return ok;
}

}  // namespace auditpipe::soci_sink
