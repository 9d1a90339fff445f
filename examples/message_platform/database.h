// The example's own view of its database: counting rows with a real query,
// independent of auditpipe's counters.
#pragma once

#include <cstdint>
#include <string>

namespace platform {

struct RowCount {
  std::int64_t rows = 0;
  std::int64_t distinct_keys = 0;  // distinct (source_id, seq)
};

// Counts the rows of `table`; a table that does not exist yet has none.
RowCount count_rows(const std::string& url, const std::string& table);

}  // namespace platform
