// The example's view of its database: opening the sink for a URL, and
// counting rows with a real query (independent of auditpipe's counters).
#pragma once

#include <auditpipe/sink.h>

#include <cstdint>
#include <memory>
#include <string>

namespace platform {

// A sink for sqlite:// URLs (and the others this build supports). Throws
// auditpipe::error for an unsupported scheme.
std::shared_ptr<auditpipe::Sink> open_sink(const std::string& url);

struct RowCount {
  std::int64_t rows = 0;
  std::int64_t distinct_keys = 0;  // distinct (source_id, seq)
};

// Counts the rows of `table`; a table that does not exist yet has none.
RowCount count_rows(const std::string& url, const std::string& table);

}  // namespace platform
