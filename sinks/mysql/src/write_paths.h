// The three ways the MySQL sink can write a batch, each as one statement
// (more only when a batch would not fit in max_allowed_packet). Each
// returns the error of the statement that failed, or nothing.
#pragma once

#include <optional>

#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_dialect.h"
#include "mysql_connection.h"
#include "mysql_error.h"

namespace auditpipe::mysql {

// MariaDB array binding: one prepared INSERT executed once for all rows,
// text bound by pointer straight from the records.
std::optional<MysqlError> write_bulk(MysqlConnection& c, const SqlTableText& sql,
                                     const Batch& batch);

// A multi-row INSERT built as text in one reused buffer, every string
// escaped with mysql_real_escape_string.
std::optional<MysqlError> write_text(MysqlConnection& c, const SqlTableText& sql,
                                     const Batch& batch);

// LOAD DATA LOCAL INFILE fed from memory. The server turns conversion
// problems into warnings here; any warning other than a skipped duplicate
// is reported through the diagnostics logger.
std::optional<MysqlError> write_load_data(MysqlConnection& c, const SqlTableText& sql,
                                          const Batch& batch);

// Set up a new connection for a path: prepare the bulk statement, or
// install the in-memory infile handler. Throw auditpipe::error.
void prepare_bulk(MysqlConnection& c, const SqlTableText& sql, const TableDescriptor& table);
void prepare_load_data(MysqlConnection& c);

// Values no MySQL column can take (NaN, infinities, dates outside DATETIME's
// years 1000-9999): refused before anything is sent, as a data error
// naming the record, so the writer isolates it.
std::optional<MysqlError> check_values(const Batch& batch);
// The error check_values() returns for column c of record r.
MysqlError value_out_of_range(const Column& c, const RecordRef& r, const char* problem);

// Runs one statement of a write path; on Galera inside START TRANSACTION
// ... COMMIT, so that the COMMIT's answer is the statement's. Measured on
// MariaDB 10.11 with galera-4 (tests/cluster, the quorum test, 4 runs of 4):
// a bulk insert in autocommit on a node that had just left the primary
// component answered OK while wsrep_last_committed did not move; in an
// explicit transaction the same moment answers 1047. One transaction per
// statement keeps each write set within the limits the statements are cut
// to (wsrep_max_ws_rows, wsrep_max_ws_size).
template <class Statement>
std::optional<MysqlError> committed(MysqlConnection& c, Statement&& statement) {
  if (!c.galera()) return statement();
  if (auto e = c.execute("START TRANSACTION")) return e;
  std::optional<MysqlError> e;
  try {
    e = statement();
  } catch (...) {
    (void)c.execute("ROLLBACK");  // no transaction left open behind an exception
    throw;
  }
  if (!e) e = c.execute("COMMIT");
  if (e) (void)c.execute("ROLLBACK");  // best effort: a broken connection is dropped anyway
  return e;
}

// A record that cannot fit in one packet however the batch is cut.
MysqlError record_too_large(const RecordRef& r, std::size_t bytes, unsigned long max_packet);

}  // namespace auditpipe::mysql
