#include "auditpipe/diagnostics.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace auditpipe {

namespace {
std::mutex& logger_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<spdlog::logger>& logger_slot() {
  static std::shared_ptr<spdlog::logger> logger;
  return logger;
}
}  // namespace

std::shared_ptr<spdlog::logger> diagnostics() {
  std::lock_guard<std::mutex> lock(logger_mutex());
  auto& slot = logger_slot();
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
  std::lock_guard<std::mutex> lock(logger_mutex());
  logger_slot() = std::move(logger);
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
