// The SQLite sink (through SOCI): auditpipe's embedded default.
//
//   auto sink = auditpipe::sqlite::open("sqlite:///var/lib/app/audit.db");
//
// URL forms: `sqlite:///absolute/path.db` (also `sqlite:////absolute/path.db`,
// SQLAlchemy's spelling), `sqlite://relative/path.db`. `sqlite:///name.db`
// (one component after three slashes: SQLAlchemy's relative file, a file in
// the root directory here) is refused as ambiguous.
// Options (query): `create_table=true|false` (default true),
// `synchronous=normal|full` (default normal: with WAL, a committed batch
// survives a crash of the process; `full` also survives power loss),
// `busy_timeout_ms=N` (default 5000).
//
// Each batch is one transaction with one prepared statement and bulk
// (vector) binding; rows whose (source_id, seq) is already present are
// skipped, so a retried batch never writes a record twice, while any other
// constraint failure is reported. The table is created as a STRICT table
// (SQLite refuses values of the wrong type instead of converting them).
// Column types: integers, booleans and timestamps (microseconds since the
// epoch) as INTEGER, double as REAL, text as TEXT (bytes stored exactly,
// NUL bytes included).
//
// Thread safety: write() serializes on an internal mutex; SQLite has one
// writer at a time anyway, so one writer thread is the right setting.
#pragma once

#include <memory>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_database.h"

/// The SQLite sink (target auditpipe::sqlite; README, The SQLite sink).
namespace auditpipe::sqlite {

/// The URL schemes open() takes, for auditpipe::open's registry (which
/// lists the first as supported).
inline constexpr std::string_view url_schemes[] = {"sqlite"};

/// Parses the URL (throws auditpipe::error if it is malformed or has an
/// unknown option). The database is opened by Sink::open().
AUDITPIPE_EXPORT std::shared_ptr<Sink> open(std::string_view url);

/// One plain connection to the URL's database for auditpipe::Database
/// (target auditpipe::open), made as the sink's own are: the same URL,
/// options and session set-up (options only a sink uses are accepted and
/// ignored). Throws as the sink's connect does: auditpipe::error naming the
/// problem (never the password), auditpipe::unreachable when no server
/// answered.
AUDITPIPE_EXPORT SqlDatabaseConnection connect_database(std::string_view url);

}  // namespace auditpipe::sqlite
