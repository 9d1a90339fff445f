// The table check of the SQL sink skeleton: creates the audit table from
// its dialect, or checks an existing one. Private to auditpipe::sql; called
// by SqlSink::open() on the set-up connection.
#pragma once

#include <functional>

#include "auditpipe/sink/sql_sink.h"

namespace auditpipe::sql_detail {

// Creates the table if it is missing (and create_table allows it), or
// checks that an existing one (also one a concurrent opener just created)
// has every column the insert writes (if migrate=add_columns, adding the
// record's missing ones, nullable, and logging each statement; if not, the
// error prints those statements), each of a type the dialect accepts
// for it, NULL allowed where the record's member is nullable, no column the
// insert leaves out that is NOT NULL without a default, a unique key on (source_id, seq), and,
// where the dialect's insert absorbs conflicts on any unique key, no other unique key over those
// columns, and that the user may insert into it. Warns about text columns shorter than the
// record's. Throws auditpipe::error naming the table, where it lives and the problem.
// `before_changes(table_exists)` runs before the table is created (false)
// or, for an existing table whose columns passed the checks, before any
// column is added (true): the caller's own refusals, so that an open
// refused leaves the table as it found it.
void create_or_check_table(SqlConnection& connection, const SqlDialect& dialect,
                           const SqlTableText& text, const TableDescriptor& table,
                           const SqlSinkSettings& settings,
                           const std::function<void(bool table_exists)>& before_changes);

}  // namespace auditpipe::sql_detail
