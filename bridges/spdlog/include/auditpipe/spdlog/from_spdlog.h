// FromSpdlog: spdlog messages into auditpipe. To spdlog it is a sink (one
// more in a logger's sinks()); to auditpipe it is a source: it turns every
// message into an audit record and commits it into a Logger<LogRecord>, so
// that
//
//   spdlog::get("payments")->warn("refund {} over limit", id);
//
// lands in a database table through the pipeline, with its batching,
// bounds and guarantees:
//
//   auto audit = std::make_shared<auditpipe::Logger<auditpipe::spdlog_bridge::LogRecord>>(
//       auditpipe::open("sqlite:///var/lib/app/log.db"));
//   auto source = std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit);
//   spdlog::get("payments")->sinks().push_back(source);
//
// A message that finds auditpipe's pool full follows the logger's overflow
// policy, so spdlog waits at most max_wait (block) or not at all (drop,
// fail, spill); nothing here can wait without bound. Messages logged by
// auditpipe's own threads, or on a producer's thread from inside this
// sink's own commit (auditpipe's diagnostics, if they are routed to this
// sink: a full spill directory is reported so), are not fed back into the
// pipeline that is reporting them: they go to the `fallback` sink if one
// is given, and are counted otherwise.
//
// The other direction, auditpipe records out as spdlog lines, is
// line_sink.h.
//
// Thread safety: any threads at once. It takes no lock of its own (spdlog's
// base_sink would hold one across the pool's wait, so that callers waited
// out each other's max_wait in turn: 3.5 s for a max_wait of 500 ms with 4
// threads); the Logger it commits into takes any number of producers.
// from_spdlog_mt and from_spdlog_st are the same sink under spdlog's names.
#pragma once

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/sink.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "auditpipe/diagnostics.h"
#include "auditpipe/export.h"
#include "auditpipe/logger.h"
#include "auditpipe/spdlog/log_record.h"

namespace auditpipe::spdlog_bridge {

/// Kept for programs that name it; FromSpdlog no longer locks (see the
/// file's comment). It was from_spdlog_mt's lock: an ordinary mutex, except
/// that auditpipe's own threads never take it, and the thread that holds
/// it may take it again.
class AUDITPIPE_EXPORT internal_aware_mutex {
 public:
  void lock() {
    if (on_internal_thread()) return;
    const std::thread::id me = std::this_thread::get_id();
    // Only this thread can have stored its own id.
    if (owner_.load(std::memory_order_relaxed) == me) {
      ++depth_;
      return;
    }
    mutex_.lock();
    owner_.store(me, std::memory_order_relaxed);
  }
  void unlock() {
    if (on_internal_thread()) return;
    if (depth_ != 0) {
      --depth_;
      return;
    }
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    mutex_.unlock();
  }

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
  unsigned depth_ = 0;  ///< times the owner took it again; only the owner touches it
};

/// An spdlog sink that commits every message it is given into a
/// Logger<LogRecord> (from_spdlog_mt or from_spdlog_st; `Mutex` is unused).
template <class Mutex>
class FromSpdlog final : public ::spdlog::sinks::sink {
 public:
  /// `flush_timeout`: the longest spdlog's flush() waits for the pipeline.
  explicit FromSpdlog(std::shared_ptr<Logger<LogRecord>> logger,
                      std::shared_ptr<::spdlog::sinks::sink> fallback = nullptr,
                      std::chrono::milliseconds flush_timeout = std::chrono::seconds(1))
      : logger_(std::move(logger)), fallback_(std::move(fallback)), flush_timeout_(flush_timeout) {}

  /// Messages committed into the pipeline, and those that were not (the
  /// overflow policy's status), and auditpipe's own messages kept out.
  std::uint64_t committed() const noexcept { return committed_.load(std::memory_order_relaxed); }
  /// Messages not committed: the pool was full and the overflow policy refused them, or the logger
  /// was closed.
  std::uint64_t not_committed() const noexcept {
    return not_committed_.load(std::memory_order_relaxed);
  }
  /// auditpipe's own diagnostics kept out of the pipeline (sent to the fallback sink, if any).
  std::uint64_t internal_messages() const noexcept {
    return internal_.load(std::memory_order_relaxed);
  }

  /// spdlog's per-message hook: one record per message (auditpipe's own
  /// threads' messages, and those made inside this thread's commit here,
  /// go to the fallback).
  void log(const ::spdlog::details::log_msg& msg) override {
    // Set while this thread commits here: a message made meanwhile is
    // auditpipe reporting on that commit (a full spill directory).
    static thread_local const FromSpdlog* committing = nullptr;
    if (on_internal_thread() || committing == this) {
      internal_.fetch_add(1, std::memory_order_relaxed);
      if (fallback_ && fallback_->should_log(msg.level)) fallback_->log(msg);
      return;
    }
    committing = this;
    struct Done {
      ~Done() { committing = nullptr; }
    } done;
    auto r = logger_->acquire();
    if (!r) {
      not_committed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    r->at = timestamp::from(msg.time);
    const auto level = ::spdlog::level::to_string_view(msg.level);
    r->level = std::string_view(level.data(), level.size());
    r->logger = std::string_view(msg.logger_name.data(), msg.logger_name.size());
    r->thread_id = static_cast<std::int64_t>(msg.thread_id);
    if (!msg.source.empty()) {
      r->source_file = msg.source.filename;
      r->source_line = msg.source.line;
      if (msg.source.funcname) r->source_function = msg.source.funcname;
    }
    r->message = std::string_view(msg.payload.data(), msg.payload.size());
    if (r.commit() == Status::ok) {
      committed_.fetch_add(1, std::memory_order_relaxed);
    } else {
      not_committed_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// spdlog's flush(): waits up to the flush timeout for the pipeline to write what was committed.
  void flush() override {
    if (!on_internal_thread()) logger_->flush(flush_timeout_);
  }

  /// Records are not text: there is no pattern to apply.
  void set_pattern(const std::string&) override {}
  /// Likewise: no formatter is used.
  void set_formatter(std::unique_ptr<::spdlog::formatter>) override {}

 private:
  std::shared_ptr<Logger<LogRecord>> logger_;
  std::shared_ptr<::spdlog::sinks::sink> fallback_;
  std::chrono::milliseconds flush_timeout_;
  std::atomic<std::uint64_t> committed_{0};
  std::atomic<std::uint64_t> not_committed_{0};
  std::atomic<std::uint64_t> internal_{0};
};

/// For spdlog's thread-safe loggers (the *_mt ones).
using from_spdlog_mt = FromSpdlog<internal_aware_mutex>;
/// For single-threaded loggers (the *_st ones): the same sink.
using from_spdlog_st = FromSpdlog<::spdlog::details::null_mutex>;

}  // namespace auditpipe::spdlog_bridge
