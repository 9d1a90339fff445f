// Where auditpipe reports on itself: write failures and retries, records it
// could not write, pool timeouts.
//
// All of it goes through one spdlog logger named "auditpipe", kept in
// spdlog's registry like any logger spdlog's factories make: created with
// spdlog::initialize_logger, so spdlog::set_level, set_pattern, the levels
// of spdlog::cfg (SPDLOG_LEVEL through cfg::load_env_levels(), argv) and
// flush_on apply to it whether they are called before or after it exists.
// If the application registers a logger under that name first, auditpipe
// uses it; after spdlog::drop_all() (or drop("auditpipe")) the next message
// uses whatever is registered then, or a fresh one from the registry's
// settings (writing to stderr). set_diagnostics_logger(logger) bypasses the
// registry with a logger of the application's own; set_diagnostics_logger
// (nullptr) returns to the registry's. Silence it with
// spdlog::get("auditpipe")->set_level(spdlog::level::off), or
// SPDLOG_LEVEL=auditpipe=off.
//
// Thread safety: both functions may be called from any thread.
#pragma once

#include <memory>

#include "auditpipe/export.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace auditpipe {

/// The name of auditpipe's own logger in spdlog's registry.
inline constexpr const char* diagnostics_logger_name = "auditpipe";

/// The logger auditpipe's messages go to now: set_diagnostics_logger's if
/// one is set, else the registry's "auditpipe" (created if missing).
AUDITPIPE_EXPORT std::shared_ptr<spdlog::logger> diagnostics();
/// Sends auditpipe's messages to `logger` instead of the registry's
/// "auditpipe"; nullptr returns to the registry's.
AUDITPIPE_EXPORT void set_diagnostics_logger(std::shared_ptr<spdlog::logger> logger);

/// True on auditpipe's own threads (writers, connection openers). A spdlog
/// sink that feeds auditpipe uses it to keep auditpipe's diagnostics from
/// looping back into the pipeline that is reporting them.
AUDITPIPE_EXPORT bool on_internal_thread() noexcept;

namespace internal {
/// Marks the calling thread as one of auditpipe's own.
AUDITPIPE_EXPORT void mark_internal_thread() noexcept;
}  // namespace internal

}  // namespace auditpipe
