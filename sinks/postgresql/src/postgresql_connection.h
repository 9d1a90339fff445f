// PostgreSQL pieces of the sink: the URL turned into libpq's connection
// keywords and values, and a pooled connection (a libpq handle, for the
// catalog, the DDL and the write paths).
//
// A connection tries the URL's hosts in order, one libpq connect each
// (PQconnectStartParams, then PQconnectPoll), waiting on the socket
// through the sink's Cancellation with connect_timeout as its deadline:
// cancel() ends a connect at once. A host that refuses, does not answer in
// time, or cannot be resolved is unreachable; one that answered (a wrong
// password, an unknown database) is a configuration error, except that a
// server which answered only that it cannot take connections now (starting
// up, shutting down: what PQping calls PQPING_REJECT) is unreachable too,
// and so is one libpq refused for target_session_attrs (a standby, a
// server in recovery, when a read-write session is asked for): during a
// failover the standby is up but cannot take writes yet, and a logger that
// may wait must start and wait for its promotion.
//
// Thread safety: none, but cancel_io(), from any thread; the pool lends it
// to one writer at a time.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/postgresql/postgresql_sink.h"
#include "auditpipe/sink/host_health.h"
#include "auditpipe/sink/sql_sink.h"
#include "binary_copy.h"

namespace auditpipe::postgresql {

// The URL's names of the write paths, in enum order.
inline constexpr std::string_view write_path_names[] = {"auto", "copy", "insert"};

struct PostgresqlConfig {
  SqlSinkSettings sink;  // redacted URL, create_table, the pool's options
  // libpq's connection keywords and their values, password included: never
  // printed. Handed over as they are (PQconnectdbParams), never joined
  // into a connection string that something would parse again: a
  // connection string re-parsed by SOCI lost runs of spaces in passwords
  // and database names.
  // Everything but the host and port, which each connect attempt adds.
  std::vector<std::string> keywords, values;
  struct Endpoint {
    std::string host, port;
    std::string describe() const { return host + ":" + port; }
  };
  std::vector<Endpoint> endpoints;   // failover order
  std::string target_session_attrs;  // as handed to libpq (among keywords, values)
  unsigned connect_timeout_s = 10;   // per host
  WritePath write_path = WritePath::automatic;
};

// Who the connections are for. A logger only writes, so it refuses the
// target_session_attrs that pick a standby or a read-only session; a
// reader (auditpipe verify, auditpipe::Database) may ask for them.
enum class UrlUse { write, read };

// Throws auditpipe::error naming the problem (password masked).
PostgresqlConfig parse_postgresql_url(std::string_view url, UrlUse use);

// An error from the server (or libpq) with its SQLSTATE.
struct PostgresqlError {
  std::string sqlstate;  // "08006", "23505", ... ("" when libpq itself failed)
  std::string message;
  std::string describe() const;
};

// The error of a failed result (or of the connection, without one).
PostgresqlError error_of(PGresult* result, PGconn* conn);

// libpq's message on one line: its continuation lines ("\n\tIs the server
// running...?", a server's DETAIL and HINT) joined with a space, one message
// per address of a host joined with "; ". A log line and stats().health_reason
// (a Prometheus label) are one line each.
std::string one_line(std::string_view message);

class PostgresqlConnection : public SqlConnection {
 public:
  // Throws auditpipe::error with libpq's message for each host;
  // auditpipe::unreachable if no host answered (see above). Throws
  // auditpipe::error once `cancel` is cancelled. With `health`, the hosts
  // are tried in its order, and one refused for target_session_attrs is
  // avoided there.
  PostgresqlConnection(const PostgresqlConfig& config, const Cancellation& cancel,
                       HostHealth* health = nullptr);
  ~PostgresqlConnection() override { PQfinish(conn_); }
  PostgresqlConnection(const PostgresqlConnection&) = delete;
  PostgresqlConnection& operator=(const PostgresqlConnection&) = delete;

  // An empty query: the cheapest round trip PostgreSQL has.
  bool ping() noexcept override;
  // For the skeleton's table check.
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override;
  void execute_ddl(const std::string& sql) override;
  // `?` becomes $1, $2, ...; the parameters go in as text (PQexecParams),
  // typed by the server from where they stand.
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& parameters) override;
  std::string server() const override { return endpoint_.describe(); }
  // The index of the endpoint in the URL's list.
  std::size_t endpoint_index() const noexcept { return endpoint_index_; }
  // Shuts the socket down: a statement waiting for the server fails at
  // once ("server closed the connection"), and the connection is broken().
  void cancel_io() noexcept override;

  PGconn* native() noexcept { return conn_; }
  bool broken() const noexcept { return PQstatus(conn_) != CONNECTION_OK; }

  // The wire type of each of the table's columns on this connection's
  // server, for binary COPY; empty: COPY's text format.
  std::vector<WireType> binary_columns;
  // The table's columns and their type OIDs when binary_columns was read
  // (types_query's answer): a binary COPY commits only while it holds.
  std::string binary_types;
  // The server refused COPY into the table (0A000: row-level security
  // applies to this user, and COPY FROM cannot apply its policies):
  // write_path=auto writes INSERTs on this connection instead.
  bool copy_refused = false;
  // Reused per connection by the write paths.
  std::string copy_data;
  std::string param_data;
  std::vector<const char*> params;
  std::vector<std::size_t> param_offsets;  // of each parameter in param_data
  std::string insert_sql;                  // INSERT text for insert_rows rows
  std::size_t insert_rows = 0;

 private:
  PGconn* conn_ = nullptr;
  int socket_ = -1;  // PQsocket() once connected
  PostgresqlConfig::Endpoint endpoint_;
  std::size_t endpoint_index_ = 0;
};

}  // namespace auditpipe::postgresql
