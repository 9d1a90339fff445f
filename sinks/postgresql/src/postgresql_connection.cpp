// The PostgreSQL URL as libpq's connection keywords, and
// PostgresqlConnection (postgresql_connection.h): the connection, its ping,
// the catalog queries and DDL of the table check.
#include "postgresql_connection.h"

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe::postgresql {

namespace {

[[noreturn]] void bad(const Url& url, const std::string& why) {
  throw error("auditpipe: bad PostgreSQL URL '" + url.redacted() + "': " + why);
}

}  // namespace

PostgresqlConfig parse_postgresql_url(std::string_view text) {
  const Url url = parse_sink_url(text, url_schemes,
                                 {"write_path", "create_table", "connect_timeout", "sslmode",
                                  "sslrootcert", "sslcert", "sslkey", "application_name"},
                                 pool_option_names);
  if (url.user.empty()) bad(url, "no user name (postgresql://user:password@host/database)");
  if (url.path.empty()) bad(url, "no database name after the host");
  if (url.hosts.empty()) bad(url, "no host");
  PostgresqlConfig c;
  c.sink.redacted_url = url.redacted();
  c.sink.table_location = "on " + c.sink.redacted_url;
  c.sink.pool.name = c.sink.redacted_url;
  std::string hosts, ports;
  for (const auto& h : url.hosts) {
    hosts += (hosts.empty() ? "" : ",") + h.host;
    ports += (ports.empty() ? "" : ",") + std::to_string(h.port.value_or(5432));
  }
  auto set = [&c](std::string keyword, std::string value) {
    c.keywords.push_back(std::move(keyword));
    c.values.push_back(std::move(value));
  };
  set("host", hosts);
  set("port", ports);
  set("dbname", url.path);
  set("user", url.user);
  if (url.password) set("password", *url.password);
  std::string connect_timeout = "10", application_name = "auditpipe";
  for (const auto& [key, value] : url.query) {
    if (key == "write_path") {
      c.write_path = static_cast<WritePath>(url_choice(url, key, value, write_path_names));
    } else if (key == "create_table") {
      if (value != "true" && value != "false") bad(url, "create_table must be true or false");
      c.sink.create_table = value == "true";
    } else if (key == "connect_timeout") {
      connect_timeout = std::to_string(url_number(url, key, value, 1, 3600));
    } else if (key == "sslmode") {
      static constexpr std::string_view modes[] = {"disable", "allow",     "prefer",
                                                   "require", "verify-ca", "verify-full"};
      url_choice(url, key, value, modes);
      set("sslmode", value);
    } else if (key == "sslrootcert" || key == "sslcert" || key == "sslkey") {
      set(key, value);
    } else if (key == "application_name") {
      application_name = value;
    } else {
      apply_pool_option(url, key, value, c.sink.pool, c.sink.pool_size);
    }
  }
  set("connect_timeout", connect_timeout);
  set("application_name", application_name);
  set("client_encoding", "UTF8");
  return c;
}

PostgresqlError error_of(PGresult* r, PGconn* conn) {
  PostgresqlError e;
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  e.sqlstate = state ? state : "";
  e.message = r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn);
  while (!e.message.empty() && (e.message.back() == '\n' || e.message.back() == ' '))
    e.message.pop_back();
  return e;
}

std::string PostgresqlError::describe() const {
  return sqlstate.empty() ? message : "(" + sqlstate + ") " + message;
}

PostgresqlConnection::PostgresqlConnection(const PostgresqlConfig& config) {
  std::vector<const char*> keywords, values;
  for (std::size_t i = 0; i < config.keywords.size(); ++i) {
    keywords.push_back(config.keywords[i].c_str());
    values.push_back(config.values[i].c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  // expand_dbname = 0: the database name is a name, never a connection
  // string of its own.
  conn_ = PQconnectdbParams(keywords.data(), values.data(), 0);
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = conn_ ? PQerrorMessage(conn_) : "out of memory";
    PQfinish(conn_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
      message.pop_back();
    throw error("auditpipe: cannot connect to " + config.sink.redacted_url + ": " + message);
  }
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
