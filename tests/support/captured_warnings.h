// CapturedWarnings: what auditpipe's diagnostics logger warns of while it
// lives (its warnings and errors, formatted; from a lower level if asked),
// instead of stderr. The logger
// it replaced is put back when it goes.
//
// Thread safety: one at a time per process; the logger it installs is
// spdlog's thread-safe ring buffer, so any thread may warn meanwhile.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "auditpipe/diagnostics.h"

namespace testing_support {

class CapturedWarnings {
 public:
  explicit CapturedWarnings(spdlog::level::level_enum from = spdlog::level::warn)
      : previous_(auditpipe::diagnostics()) {
    ring_->set_level(from);
    auditpipe::set_diagnostics_logger(std::make_shared<spdlog::logger>("auditpipe", ring_));
  }
  ~CapturedWarnings() { auditpipe::set_diagnostics_logger(previous_); }
  CapturedWarnings(const CapturedWarnings&) = delete;
  CapturedWarnings& operator=(const CapturedWarnings&) = delete;

  /// The last 256 warnings, each line as formatted, run together.
  std::string text() const {
    std::string out;
    for (const auto& line : ring_->last_formatted()) out += line;
    return out;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> ring_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
};

}  // namespace testing_support
