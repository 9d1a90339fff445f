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

// Counts the rows of `table` whose source_id is one of a logger's with
// Options::source_id_base `base` (base .. base + 0xffff: one source per
// producer thread), so that other processes writing the same table at the
// same time are not counted; a table that does not exist yet has none.
RowCount count_rows(const std::string& url, const std::string& table, std::int64_t base);

}  // namespace platform
