// What SQLite calls the parts of an audit table, for the SQL sink
// skeleton: ANSI quoting, INTEGER/REAL/TEXT columns in a STRICT table, a
// UNIQUE (source_id, seq) key and ON CONFLICT (source_id, seq) DO NOTHING.
// The catalog queries are SqliteConnection's (sqlite_dialect.cpp). Private
// to the sink.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::soci_sink {

extern const SqlDialect sqlite_dialect;

}  // namespace auditpipe::soci_sink
