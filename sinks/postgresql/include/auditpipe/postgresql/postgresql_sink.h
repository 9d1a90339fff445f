// The PostgreSQL sink: libpq connections in the SQL skeleton's pool, for
// COPY, INSERT and the catalog.
//
//   auto sink = auditpipe::postgresql::open("postgresql://audit:secret@db:5432/audit");
//
// Each batch is one statement, so one transaction: by default a COPY of
// the batch straight into the table in COPY's binary format, encoded by the
// column types each connection reads from the server (text where a type
// has no binary form; measured fastest); a batch retried
// after an ambiguous failure, whose rows may already be there, is written
// with INSERT ... ON CONFLICT (source_id, seq) DO NOTHING instead, so only
// repeats of that key are skipped and any other conflict is an error.
//
// URL: postgresql://user:password@host:port[,host2:port2]/database?option=value
// (postgres:// too; several hosts are tried in order by libpq), or with a
// Unix socket directory as libpq spells it,
// postgresql://user@/database?host=/run/postgresql&port=5432. Options:
//   write_path        auto | copy | insert   (auto: copy)
//   create_table      true | false  (default true)
//   connect_timeout   seconds, default 10
//   sslmode           disable | allow | prefer | require | verify-ca | verify-full
//   sslrootcert, sslcert, sslkey   file paths
//   application_name  default auditpipe
//   host, port        socket directory (or host names, comma-separated) and
//                     port, for a URL without a host part
//   pool_size, min_idle, connection_timeout_ms, idle_timeout_ms, max_lifetime_ms,
//   keepalive_ms, validation_ms, leak_detection_ms   ConnectionPool options
//
// Column types: BOOLEAN, SMALLINT/INTEGER/BIGINT (unsigned types one size
// up), DOUBLE PRECISION, TIMESTAMP(6) WITH TIME ZONE, TEXT. PostgreSQL's
// text cannot hold a NUL byte: the writer replaces NULs with U+FFFD before
// the sink sees them, and counts the fields (nul_replaced_fields).
//
// Thread safety: write() from several writer threads at once; each takes
// its own connection from the pool.
#pragma once

#include <memory>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/sink/sql_database.h"
#include "auditpipe/sink/sql_sink.h"

/// The PostgreSQL sink (target auditpipe::postgresql; README, The PostgreSQL sink).
namespace auditpipe::postgresql {

/// How a batch is sent (URL option write_path).
enum class WritePath {
  automatic,  ///< copy
  copy,       ///< COPY ... FROM STDIN, the batch in COPY's binary (or text) format
  insert,     ///< a multi-row INSERT ... ON CONFLICT DO NOTHING, parameters bound as text
};

/// The sink open() makes.
using PostgresqlSink = SqlSinkWithWritePaths<WritePath>;

/// The URL schemes open() takes, for auditpipe::open's registry (which
/// lists the first as supported).
inline constexpr std::string_view url_schemes[] = {"postgresql", "postgres"};

/// Parses the URL (throws auditpipe::error naming the problem, password
/// masked). Connecting and checking the table happen in open().
AUDITPIPE_EXPORT std::shared_ptr<PostgresqlSink> open(std::string_view url);

/// One plain connection to the URL's database for auditpipe::Database
/// (target auditpipe::open), made as the sink's own are: the same URL,
/// options and session set-up (options only a sink uses are accepted and
/// ignored). Throws as the sink's connect does: auditpipe::error naming the
/// problem (never the password), auditpipe::unreachable when no server
/// answered.
AUDITPIPE_EXPORT SqlDatabaseConnection connect_database(std::string_view url);

}  // namespace auditpipe::postgresql
