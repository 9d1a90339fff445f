// What SQLite calls the parts of an audit table, for the SQL sink
// skeleton: ANSI quoting, INTEGER/REAL/TEXT columns in a STRICT table, a
// UNIQUE (source_id, seq) key, ON CONFLICT (source_id, seq) DO NOTHING, and
// the catalog queries an existing table is checked with. Private to
// auditpipe::sqlite.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::sqlite {

extern const SqlDialect sqlite_dialect;

}  // namespace auditpipe::sqlite
