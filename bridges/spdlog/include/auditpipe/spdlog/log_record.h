// LogRecord: a spdlog message as an audit record (table log_events).
//
// What FromSpdlog (from_spdlog.h) stores for every message: when, at what
// level, from which logger and thread, where in the source (when the
// message carries it: SPDLOG_LOGGER_* macros), and the formatted message,
// cut at a UTF-8 boundary to 1000 bytes (counted in truncated_fields).
#pragma once

#include <cstdint>

#include "auditpipe/export.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"

/// auditpipe and spdlog, both ways (target auditpipe::spdlog; README, spdlog, both ways).
namespace auditpipe::spdlog_bridge {

/// One spdlog message as an audit row of the table log_events.
struct AUDITPIPE_EXPORT LogRecord {
  /// The message's time (spdlog's, to the microsecond).
  timestamp at;
  fixed_string<8> level;  ///< trace, debug, info, warning, error, critical
  /// The spdlog logger's name.
  fixed_string<64> logger;
  /// The thread that logged it (spdlog's thread id).
  std::int64_t thread_id = 0;
  /// Source file, when the message carries its location (SPDLOG_LOGGER_* macros); else empty.
  fixed_string<160> source_file;
  /// Source line, or 0.
  std::int32_t source_line = 0;
  /// Source function, or empty.
  fixed_string<96> source_function;
  /// The formatted message, cut at a UTF-8 boundary to 1000 bytes (counted in
  /// Stats::truncated_fields).
  fixed_string<1000> message;
};

/// LogRecord's table: log_events.
constexpr auto describe(type_tag<LogRecord>) {
  return table<LogRecord>(
      "log_events", AUDITPIPE_COLUMN(LogRecord, at), AUDITPIPE_COLUMN(LogRecord, level),
      AUDITPIPE_COLUMN(LogRecord, logger), AUDITPIPE_COLUMN(LogRecord, thread_id),
      AUDITPIPE_COLUMN(LogRecord, source_file), AUDITPIPE_COLUMN(LogRecord, source_line),
      AUDITPIPE_COLUMN(LogRecord, source_function), AUDITPIPE_COLUMN(LogRecord, message));
}

}  // namespace auditpipe::spdlog_bridge
