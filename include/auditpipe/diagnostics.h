// Where auditpipe reports on itself: write failures and retries, records it
// could not write, pool timeouts.
//
// All of it goes through one spdlog logger named "auditpipe". If the
// application registers a logger under that name first (or passes one to
// set_diagnostics_logger), auditpipe uses it; otherwise it creates one that
// writes to stderr. Silence it with
// auditpipe::diagnostics()->set_level(spdlog::level::off).
//
// Thread safety: both functions may be called from any thread.
#pragma once

#include <memory>

#include "auditpipe/export.h"

namespace spdlog {
class logger;
}  // namespace spdlog

namespace auditpipe {

inline constexpr const char* diagnostics_logger_name = "auditpipe";

AUDITPIPE_EXPORT std::shared_ptr<spdlog::logger> diagnostics();
AUDITPIPE_EXPORT void set_diagnostics_logger(std::shared_ptr<spdlog::logger> logger);

// True on auditpipe's own threads (writers, connection openers). A spdlog
// sink that feeds auditpipe uses it to keep auditpipe's diagnostics from
// looping back into the pipeline that is reporting them.
AUDITPIPE_EXPORT bool on_internal_thread() noexcept;

namespace internal {
// Marks the calling thread as one of auditpipe's own.
AUDITPIPE_EXPORT void mark_internal_thread() noexcept;
}  // namespace internal

}  // namespace auditpipe
