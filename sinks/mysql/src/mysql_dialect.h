// What MySQL/MariaDB calls the parts of an audit table, for the SQL sink
// skeleton: backtick quoting, the column types, an InnoDB utf8mb4 table
// keyed on (source_id, seq), ON DUPLICATE KEY UPDATE as the idempotent
// insert, and where the catalog keeps an existing table's columns and
// unique keys. Private to auditpipe::mysql.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::mysql {

extern const SqlDialect mysql_dialect;

}  // namespace auditpipe::mysql
