// SqlDatabaseConnection: what an SQL sink's connect_database(url) gives
// auditpipe::Database (target auditpipe::open): one connection made by the
// sink's own URL parsing and connect (TLS, timeouts, sockets, failover, the
// session set up as for writes), its dialect, and how to speak of it
// without the password. read_table_schema(): an existing table read back
// as a runtime schema, through the dialect's schema_query and
// schema_column(), for every SQL sink the same way.
//
// Who may call: auditpipe::Database; SQL sinks make the connection.
//
// Thread safety: one thread at a time per connection; read_table_schema()
// is as safe as the connection it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/schema.h"
#include "auditpipe/sink/sql_dialect.h"
#include "auditpipe/sink/sql_sink.h"

namespace auditpipe {

/// One plain connection of an SQL sink's database, for auditpipe::Database.
struct AUDITPIPE_EXPORT SqlDatabaseConnection {
  /// Connected and set up as the sink's own connections are.
  std::unique_ptr<SqlConnection> connection;
  /// The sink's dialect (a constant that outlives every connection).
  const SqlDialect* dialect = nullptr;
  /// The URL with its password masked (describe()).
  std::string redacted_url;
  /// Where tables live, for messages: "in database audit on mysql://...",
  /// "in '/var/lib/app/audit.db'" (SqlSinkSettings::table_location).
  std::string table_location;
  /// The URL's password, or empty: only to mask it in every message.
  std::string password;
};

/// The schema of the existing table `table` on `connection` in `dialect`,
/// or nullopt if there is none: its columns in their order, without
/// source_id and seq (auditpipe::Database::read_schema has the contract).
/// Throws auditpipe::error naming the table, `location`, each column no
/// ColumnType holds with its type and why, a table without the (source_id,
/// seq) columns and their unique key when `require_key` is set, and an
/// `unbounded_text_bytes` outside 1 .. 16 MiB.
AUDITPIPE_EXPORT std::optional<Schema> read_table_schema(
    SqlConnection& connection, const SqlDialect& dialect, std::string_view table,
    std::uint32_t unbounded_text_bytes, bool require_key, std::string_view location);

}  // namespace auditpipe
