// What PostgreSQL calls the parts of an audit table, for the SQL sink
// skeleton: ANSI quoting, the column types (unsigned types one size up,
// TIMESTAMP(6) WITH TIME ZONE, TEXT), a (source_id, seq) primary key and
// ON CONFLICT (source_id, seq) DO NOTHING. The catalog queries are
// PostgresConnection's (postgresql_dialect.cpp). Private to the sink.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::soci_sink {

extern const SqlDialect postgresql_dialect;

}  // namespace auditpipe::soci_sink
