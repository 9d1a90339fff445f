// A Sink that writes records as lines through any spdlog logger (a rotating
// file, the console): a debug sink, or a fallback target.
//
//   auditpipe::Logger<AuditRow> logger(auditpipe::spdlog_bridge::make_line_sink(
//       spdlog::rotating_logger_mt("audit-file", "audit.log", 64 << 20, 8)));
//
// One line per record, logfmt style: the table, source_id and seq, then
// each column as name=value; text is quoted with \" \\ \n \r \t escaped,
// timestamps are RFC 3339 UTC. Each batch goes to the logger's sinks
// themselves and is flushed before write() returns: what a sink throws (a
// full disk), which the logger's own log() would catch and print, fails
// the batch, which the writer retries (lines written before the failure
// then appear twice, told apart by source_id and seq).
//
// Thread safety: write() may be called from several writers (spdlog's _mt
// loggers are thread-safe).
#pragma once

#include <spdlog/common.h>

#include <memory>

#include "auditpipe/export.h"
#include "auditpipe/sink/sink.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace auditpipe::spdlog_bridge {

/// A Sink that writes each record as one logfmt line (table, source_id, seq,
/// then each column as name=value) through `logger` at `level`.
AUDITPIPE_EXPORT std::shared_ptr<Sink> make_line_sink(
    std::shared_ptr<::spdlog::logger> logger,
    ::spdlog::level::level_enum level = ::spdlog::level::info);

}  // namespace auditpipe::spdlog_bridge
