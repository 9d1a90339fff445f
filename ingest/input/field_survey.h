// FieldSurvey: the field names an input's first records carry (a CSV/TSV
// header's names; the top-level keys of JSON lines), read from the bytes the
// loader looks ahead. Owned by ingest/input; the loader calls it to decide
// which columns the database fills (RowMapper's MappingOptions) before the
// load starts.
//
// Thread safety: none needed (a pure function of its arguments).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "input/format.h"

namespace auditpipe::ingest {

/// The names of the fields the whole records in `prefix` carry. A record
/// cut off by the prefix's end, a line that is not a JSON object and a JSON
/// field whose value is null add nothing.
std::set<std::string> surveyed_fields(std::string_view prefix, Format format,
                                      std::size_t max_record_bytes);

}  // namespace auditpipe::ingest
