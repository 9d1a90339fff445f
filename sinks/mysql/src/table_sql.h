// The SQL that a record type's descriptor turns into for MySQL: the table
// definition, the column list, the idempotent insert, and the check of an
// existing table.
#pragma once

#include <string>
#include <string_view>

#include "auditpipe/column.h"
#include "mysql_config.h"
#include "mysql_connection.h"

namespace auditpipe::mysql {

// `name`, with any backtick doubled.
std::string quote_identifier(std::string_view name);

struct TableSql {
  std::string table;    // quoted table name
  std::string columns;  // quoted record columns, then source_id, seq
  // INSERT INTO t (columns) VALUES  ...rows...  ON DUPLICATE KEY UPDATE seq = seq
  // Only a repeat of the primary key (source_id, seq) can conflict, so only
  // a retried record is skipped; any other failure is an error.
  std::string insert_head;
  std::string insert_tail;
  std::size_t column_count = 0;  // including source_id and seq
};

TableSql table_sql(const TableDescriptor& table);

// Creates the table if it is missing (and allowed), or checks that an
// existing one has every column and the (source_id, seq) key, and no other
// unique key that the idempotent insert would silently absorb. Throws
// auditpipe::error naming the problem.
void prepare_table(MysqlConnection& connection, const TableDescriptor& table,
                   const MysqlConfig& config);

}  // namespace auditpipe::mysql
