// COPY's binary format for a batch: what the PostgreSQL sink's COPY sends
// when every column's type on the server has a binary form it can write.
// The server then parses no text (bench/sink_ceiling: binary COPY of rows
// built beforehand ran at 1.31x text COPY), and the writer formats no
// timestamps or numbers as text.
//
// Binary input must match the column's type exactly (an int4 column takes
// 4 bytes, never 8), so the types come from the server (pg_attribute, read
// on each connection before its first batch), not from what the sink would
// create: an existing table may have wider integers or a timestamp without
// time zone.
//
// Used by the PostgreSQL sink only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/sink/sink.h"

namespace auditpipe::postgresql {

// How a value travels: the server column's binary input form.
enum class WireType : std::uint8_t { boolean, int2, int4, int8, float8, timestamp, text };

// The wire type for a record column of `type` stored in a server column of
// type `oid` (pg_type's oid), or nullopt if it has none here (the sink then
// writes COPY's text format).
std::optional<WireType> wire_type(ColumnType type, std::uint32_t oid);

// Appends `batch` in COPY's binary format (header, one tuple per record with
// the key columns last, trailer), `wire[i]` being column i's wire type.
// False, with `out` as it was, if a value has no binary form the server
// would take as the text path sends it (a timestamp before PostgreSQL's
// earliest, 4714-11-24 BC, which binary input would not refuse the same
// way): that batch goes as text, where the server refuses just that row.
bool append_binary_copy(std::string& out, const Batch& batch, const std::vector<WireType>& wire);

}  // namespace auditpipe::postgresql
