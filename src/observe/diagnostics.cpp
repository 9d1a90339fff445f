#include "auditpipe/diagnostics.h"

#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe {

namespace {
// The logger set_diagnostics_logger() chose, if any; a function-local
// static, so it exists before any static object's constructor might report
// something.
struct Slot {
  detail::Mutex mutex;
  std::shared_ptr<spdlog::logger> chosen AUDITPIPE_GUARDED_BY(mutex);
};
// Its mutex is held by the forking thread across fork(): a writer asking
// for the logger holds it while it is in spdlog's registry, and a child
// then waited for it for ever at its own first message. Made as the
// library loads, not by the first thread to report something, for the same
// reason. Nothing else of auditpipe's is taken while it is held.
Slot& logger_slot() {
  static Slot slot;
  static const bool handlers = [] {
    pthread_atfork([]() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { logger_slot().mutex.lock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { logger_slot().mutex.unlock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { logger_slot().mutex.unlock(); });
    return true;
  }();
  (void)handlers;
  return slot;
}
[[maybe_unused]] const Slot& logger_slot_made_at_load = logger_slot();

// The "auditpipe" logger as spdlog's own factories make one: through
// initialize_logger, so it starts with the registry's pattern, its level
// for this name (SPDLOG_LEVEL, spdlog::cfg) or the global one, its flush
// level and error handler, and is registered, so that later
// spdlog::set_level / set_pattern / cfg calls reach it too.
std::shared_ptr<spdlog::logger> create_registered() {
  auto created = std::make_shared<spdlog::logger>(
      diagnostics_logger_name, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  try {
    spdlog::initialize_logger(created);
    // With spdlog::set_automatic_registration(false) it is not registered;
    // the application still finds (and configures) it by name.
    if (!spdlog::get(diagnostics_logger_name)) spdlog::register_logger(created);
  } catch (const spdlog::spdlog_ex&) {
    // The application registered one under the name meanwhile: that one.
    if (auto existing = spdlog::get(diagnostics_logger_name)) return existing;
  }
  return created;
}
}  // namespace

std::shared_ptr<spdlog::logger> diagnostics() {
  Slot& s = logger_slot();
  detail::MutexLock lock(s.mutex);
  if (s.chosen) return s.chosen;
  // Looked up on every call (only failures and start-up messages ask), not
  // cached: after spdlog::drop_all() or drop("auditpipe"), or when the
  // application registers its own under the name, the registry's is the
  // one its configuration reaches.
  if (auto registered = spdlog::get(diagnostics_logger_name)) return registered;
  return create_registered();
}

void set_diagnostics_logger(std::shared_ptr<spdlog::logger> logger) {
  Slot& s = logger_slot();
  detail::MutexLock lock(s.mutex);
  s.chosen = std::move(logger);
}

namespace {
thread_local bool internal_thread = false;
}  // namespace

bool on_internal_thread() noexcept {
  return internal_thread;
}

namespace internal {
void mark_internal_thread() noexcept {
  internal_thread = true;
}
}  // namespace internal

}  // namespace auditpipe
