#include <mysqld_error.h>

#include <cmath>

#include "time_format.h"
#include "write_paths.h"

namespace auditpipe::mysql {

std::optional<MysqlError> check_values(const Batch& batch) {
  for (const RecordRef& r : batch.records) {
    for (const Column& c : batch.table.columns) {
      if (is_null(r.data, c)) continue;  // NULL fits every column the table check let through
      if (c.type == ColumnType::float64 && !std::isfinite(read_float64(r.data, c))) {
        return value_out_of_range(c, r, "is not a finite number");
      }
      if (c.type == ColumnType::timestamp &&
          !fits_datetime(civil_time_of(read_integer(r.data, c)))) {
        return value_out_of_range(c, r, "is outside DATETIME's years 1000-9999");
      }
    }
  }
  return std::nullopt;
}

MysqlError value_out_of_range(const Column& c, const RecordRef& r, const char* problem) {
  return MysqlError{ER_WARN_DATA_OUT_OF_RANGE, "22003",
                    "value of column " + std::string(c.name) + " in record (source_id " +
                        std::to_string(r.source_id) + ", seq " + std::to_string(r.seq) + ") " +
                        problem};
}

MysqlError record_too_large(const RecordRef& r, std::size_t bytes, unsigned long max_packet) {
  return MysqlError{ER_DATA_TOO_LONG, "22001",
                    "record (source_id " + std::to_string(r.source_id) + ", seq " +
                        std::to_string(r.seq) + ") needs " + std::to_string(bytes) +
                        " bytes, more than the server's max_allowed_packet (" +
                        std::to_string(max_packet) + ")"};
}

}  // namespace auditpipe::mysql
