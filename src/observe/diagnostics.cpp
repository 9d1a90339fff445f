#include "auditpipe/diagnostics.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe {

namespace {
// The logger in use; a function-local static, so it exists before any
// static object's constructor might report something.
struct Slot {
  detail::Mutex mutex;
  std::shared_ptr<spdlog::logger> logger AUDITPIPE_GUARDED_BY(mutex);
};
Slot& logger_slot() {
  static Slot slot;
  return slot;
}
}  // namespace

std::shared_ptr<spdlog::logger> diagnostics() {
  Slot& s = logger_slot();
  detail::MutexLock lock(s.mutex);
  auto& slot = s.logger;
  if (!slot) {
    slot = spdlog::get(diagnostics_logger_name);
    if (!slot) {
      slot = std::make_shared<spdlog::logger>(
          diagnostics_logger_name, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
      // Registering lets the application find and reconfigure it by name;
      // another thread may have registered one meanwhile.
      try {
        spdlog::register_logger(slot);
      } catch (const spdlog::spdlog_ex&) {
        if (auto existing = spdlog::get(diagnostics_logger_name)) slot = existing;
      }
    }
  }
  return slot;
}

void set_diagnostics_logger(std::shared_ptr<spdlog::logger> logger) {
  Slot& s = logger_slot();
  detail::MutexLock lock(s.mutex);
  s.logger = std::move(logger);
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
