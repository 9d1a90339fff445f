// The MySQL/MariaDB sink: audit rows through the libmysqlclient API
// (MariaDB Connector/C), over a pool of connections.
//
//   auto sink =
//   auditpipe::mysql::open("mysql://audit:secret@db1:3306,db2:3306/audit?tls=required");
//   auditpipe::Logger<AuditRow> logger(sink);
//
// Each batch is written as one statement on a pooled connection, in
// autocommit: no SET, COMMIT, ROLLBACK or probe per batch (on a Galera node
// the statement runs in START TRANSACTION ... COMMIT, whose answer is the
// replication's: docs/scale-out.md). Writes are
// idempotent on the (source_id, seq) primary key and the session runs in
// strict SQL mode, so a retried batch is never duplicated and a value the
// column cannot hold is an error, not a silent conversion.
//
// URL: mysql://user:password@host:port[,host2:port2...]/database?option=value
// (hosts are tried in order: failover). A unix socket is a percent-encoded
// path as the host (`mysql://app@%2Frun%2Fmysqld%2Fmysqld.sock/audit`) or
// the `socket` option. Options:
//   write_path          auto | bulk | text | load_data   (auto: bulk when the
//                       server is MariaDB and supports it, else text)
//   create_table        true | false  (default true)
//   charset             utf8mb4 only (the default). The sink writes UTF-8 and
//                       the connection must say so: any other charset makes
//                       the server re-encode the text (latin1 double-encodes
//                       every non-ASCII character without a warning;
//                       utf8mb3 refuses 4-byte characters), so it is
//                       refused at open().
//   connect_timeout     seconds, default 10
//   read_timeout        seconds, default 60
//   write_timeout       seconds, default 60
//   tls                 disabled | required | verify_ca | verify_identity
//   tls_ca, tls_cert, tls_key   file paths
//   socket              unix socket path (for a host of localhost)
//   pool_size           connections (default: one per writer thread, +1 with seal=)
//   min_idle            default pool_size
//   connection_timeout_ms, idle_timeout_ms, max_lifetime_ms, keepalive_ms,
//   validation_ms, leak_detection_ms   ConnectionPool options
//
// Thread safety: write() from several writer threads at once; each takes
// its own connection from the pool.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/sink/sql_database.h"
#include "auditpipe/sink/sql_sink.h"

/// The MySQL/MariaDB sink (target auditpipe::mysql; README, The MySQL/MariaDB sink).
namespace auditpipe::mysql {

/// How a batch is sent (URL option write_path; README, Write paths).
enum class WritePath {
  automatic,  ///< bulk if the server supports it, else text
  bulk,       ///< MariaDB array binding: one prepared statement, all rows in one packet
  text,       ///< multi-row INSERT text, escaped with mysql_real_escape_string
  load_data,  ///< LOAD DATA LOCAL INFILE streamed from memory
};

/// The sink open() makes.
using MysqlSink = SqlSinkWithWritePaths<WritePath>;

/// The URL schemes open() takes, for auditpipe::open's registry (which
/// lists the first as supported).
inline constexpr std::string_view url_schemes[] = {"mysql", "mariadb"};

/// Parses the URL (throws auditpipe::error naming the problem, with the
/// password masked). Connecting and checking the table happen in open().
AUDITPIPE_EXPORT std::shared_ptr<MysqlSink> open(std::string_view url);

/// One plain connection to the URL's database for auditpipe::Database
/// (target auditpipe::open), made as the sink's own are: the same URL,
/// options and session set-up (options only a sink uses are accepted and
/// ignored). Throws as the sink's connect does: auditpipe::error naming the
/// problem (never the password), auditpipe::unreachable when no server
/// answered.
AUDITPIPE_EXPORT SqlDatabaseConnection connect_database(std::string_view url);

}  // namespace auditpipe::mysql
