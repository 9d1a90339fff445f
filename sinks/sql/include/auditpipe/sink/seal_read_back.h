// A sealed row as SQL gives it back: the select expression that reads each
// column as text that is its exact value, and the canonical bytes
// (seal::RowEncoder's) of that text. `auditpipe verify` recomputes seals
// with these; the SQL sink seals with them the rows a stopped run stored
// and did not seal (SealWriter, a late seal), so that both read a row the
// same way.
//
// Who may call: the SQL sink skeleton and the verify command.
//
// Thread safety: pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/schema.h"
#include "auditpipe/sink/seal.h"

namespace auditpipe::seal {

/// What selects column `quoted` (a quoted name) of type `type` as text
/// encode_read_back() takes: a timestamp as µs since the epoch on MySQL
/// and PostgreSQL (whose text forms drop or round digits); the column as
/// it is otherwise. `dialect` is SqlDialect::name ("mysql", ...).
AUDITPIPE_EXPORT std::string read_back_expression(std::string_view dialect, ColumnType type,
                                                  const std::string& quoted);

/// The select list reading a row back: read_back_expression() of each of
/// `columns` (quoted by `quote`), then seq.
AUDITPIPE_EXPORT std::string read_back_select(
    std::string_view dialect, const std::vector<ColumnSpec>& columns,
    const std::function<std::string(std::string_view)>& quote);

/// The session settings read_back_expression()'s text needs, as
/// statements: PostgreSQL's time zone UTC (date_trunc works in the
/// session's) and every float digit (extra_float_digits 3: a DBA's 0
/// would round doubles); none elsewhere. `local`: SET LOCAL, which ends
/// with the transaction it is run in.
AUDITPIPE_EXPORT std::vector<std::string> read_back_settings(std::string_view dialect, bool local);

/// Appends one value read back (NULL: nullopt) of a column of `type` to
/// `enc`, as the writer encoded it when it sealed the value. Text that is
/// not a value of the type (a SQLite table without STRICT holds anything)
/// is encoded as text, which no sealed value of the type encodes as.
AUDITPIPE_EXPORT void encode_read_back(RowEncoder& enc, ColumnType type,
                                       std::optional<std::string_view> value);

}  // namespace auditpipe::seal
