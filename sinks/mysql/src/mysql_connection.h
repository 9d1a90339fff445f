// MysqlConnection: one open MySQL/MariaDB session, as the pool keeps it.
//
// Opened against the first endpoint of the URL that answers (failover, in
// the order given), with the session set up once, at connect: strict SQL
// mode through the init command, the charset, timeouts, TLS. Nothing is
// changed on the session after that, so nothing ever has to be reset.
// It also learns, once, what the server allows: max_allowed_packet and
// whether it takes MariaDB's bulk (array-bound) execution.
//
// The connect runs on Connector/C's non-blocking API (MYSQL_OPT_NONBLOCK,
// mysql_real_connect_start/_cont), waiting through the sink's
// Cancellation, so that cancel() ends it at once; everything after the
// connect is the ordinary blocking API, which the library allows on the
// same handle.
//
// Thread safety: none, but cancel_io(), from any thread; the pool lends it
// to one writer at a time.
#pragma once

#include <mysql.h>

#include <algorithm>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/sink/host_health.h"
#include "auditpipe/sink/sql_sink.h"
#include "mysql_config.h"
#include "mysql_error.h"

namespace auditpipe::mysql {

class MysqlConnection : public SqlConnection {
 public:
  // Per-connection state of a write path (prepared statements, buffers).
  struct PathState {
    virtual ~PathState() = default;
  };

  // Tries each endpoint in order. Throws auditpipe::error listing what
  // each endpoint answered (the password is never part of it);
  // auditpipe::unreachable if none answered at all (is_unreachable_error),
  // and if `cancel` was cancelled.
  // With `health`, in its order, and the hosts that fail are avoided
  // there. A Galera node (wsrep_on) is refused unless wsrep_ready=ON and
  // wsrep_local_state=4 (Synced): a joiner or donor is not written to until
  // its state transfer finished.
  static std::unique_ptr<MysqlConnection> connect(const MysqlConfig& config, bool local_infile,
                                                  const Cancellation& cancel,
                                                  HostHealth* health = nullptr);

  ~MysqlConnection() override;
  MysqlConnection(const MysqlConnection&) = delete;
  MysqlConnection& operator=(const MysqlConnection&) = delete;

  bool ping() noexcept override;
  // For the skeleton's table check.
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override;
  void execute_ddl(const std::string& sql) override;
  // The parameters go in as string literals escaped by the server's
  // function (mysql_real_escape_string: the session's charset and
  // NO_BACKSLASH_ESCAPES), over the text protocol, so that every statement
  // may have them and every value comes back as the server's text.
  std::vector<std::vector<std::optional<std::string>>> query_rows(
      std::string_view sql, const std::vector<std::string>& params) override;
  void query_each(std::string_view sql, const std::vector<std::string>& params,
                  const RowCallback& on_row) override;
  std::string server() const override { return endpoint_.describe(); }
  // Shuts the socket down: a statement waiting for the server fails with
  // 2013 at once (Connector/C sends with MSG_NOSIGNAL: no SIGPIPE).
  void cancel_io() noexcept override;

  MYSQL* handle() noexcept { return mysql_; }
  const MysqlEndpoint& endpoint() const noexcept { return endpoint_; }
  bool bulk_supported() const noexcept { return bulk_supported_; }
  unsigned long max_allowed_packet() const noexcept { return max_allowed_packet_; }
  // The largest packet payload (command byte included) the server takes:
  // it refuses a packet of max_allowed_packet bytes itself (measured on
  // MariaDB 10.11: 1153 "Got a packet bigger than 'max_allowed_packet'").
  // On Galera, also below wsrep_max_ws_size (half of it: a write set
  // holds the row images and keys, more than the statement's text).
  std::size_t max_packet_payload() const noexcept {
    std::size_t p = max_allowed_packet_ > 0 ? max_allowed_packet_ - 1 : 0;
    if (max_ws_size_ > 0) p = std::min<std::size_t>(p, max_ws_size_ / 2);
    return p;
  }
  // The index of the endpoint in the URL's list.
  std::size_t endpoint_index() const noexcept { return endpoint_index_; }
  // A Galera node (wsrep_on=ON).
  bool galera() const noexcept { return galera_; }
  // wsrep_max_ws_rows (0: no limit): a statement writes at most this many rows.
  std::size_t max_statement_rows() const noexcept { return max_ws_rows_; }

  // Runs one statement and discards any result. The error, if it failed.
  std::optional<MysqlError> execute(std::string_view sql) noexcept;
  // The rows the last execute() changed (the server's affected rows).
  std::uint64_t last_affected_rows() const noexcept { return affected_; }
  // The first column of the first row of a query (nullopt on error or no row).
  std::optional<std::string> query_value(std::string_view sql) noexcept;
  // Galera, after a write that succeeded: why it may not count as stored
  // (the node is out of the primary component, or its membership changed
  // since the connect or the previous call, so the write overlapped a
  // reconfiguration), or nullopt when it counts.
  std::optional<std::string> galera_write_doubt();
  // The error state of the session now (the password masked, as in every
  // error this connection reports).
  MysqlError last_error() const;
  // `text` with the password masked: a server's message may echo the user
  // or host name, which the password may equal.
  std::string hide_password(std::string text) const;

  std::unique_ptr<PathState> path_state;
  // Rows the write path's statements stored since the sink zeroed it (the
  // server's affected rows: a row skipped as a duplicate counts 0).
  std::uint64_t rows_stored = 0;

 private:
  std::uint64_t affected_ = 0;
  MysqlConnection(MYSQL* mysql, MysqlEndpoint endpoint, std::string password);
  /// `sql` with each `?` replaced by its parameter, quoted and escaped.
  std::string bound(std::string_view sql, const std::vector<std::string>& params);

  MYSQL* mysql_;
  const int socket_;  // mysql_get_socket() once connected: fixed, there is no reconnect
  MysqlEndpoint endpoint_;
  std::string password_;  // only to keep it out of messages
  bool bulk_supported_ = false;
  unsigned long max_allowed_packet_ = 16u << 20;
  std::size_t endpoint_index_ = 0;
  bool galera_ = false;
  std::size_t max_ws_rows_ = 0;
  std::size_t max_ws_size_ = 0;
  // wsrep_cluster_conf_id when last read (at connect, after each write).
  std::string conf_id_;
};

}  // namespace auditpipe::mysql
