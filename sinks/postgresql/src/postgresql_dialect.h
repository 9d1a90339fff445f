// What PostgreSQL calls the parts of an audit table, for the SQL sink
// skeleton: ANSI quoting, the column types (unsigned types one size up,
// TIMESTAMP(6) WITH TIME ZONE, TEXT), a (source_id, seq) primary key and
// ON CONFLICT (source_id, seq) DO NOTHING, and the catalog queries an
// existing table is checked with. Private to auditpipe::postgresql.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::postgresql {

extern const SqlDialect postgresql_dialect;

}  // namespace auditpipe::postgresql
