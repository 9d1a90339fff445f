// What MySQL/MariaDB calls the parts of an audit table, for the SQL sink
// skeleton: backtick quoting, the column types, an InnoDB utf8mb4 table
// keyed on (source_id, seq), and ON DUPLICATE KEY UPDATE as the idempotent
// insert. The catalog queries an existing table is checked with are
// MysqlConnection's (defined in mysql_dialect.cpp, next to the types they
// check). Private to auditpipe::mysql.
#pragma once

#include "auditpipe/sink/sql_dialect.h"

namespace auditpipe::mysql {

extern const SqlDialect mysql_dialect;

}  // namespace auditpipe::mysql
