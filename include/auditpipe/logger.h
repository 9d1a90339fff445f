// Logger<Record>: the typed front door of auditpipe.
//
//   auditpipe::Logger<AuditRow> logger(auditpipe::sqlite::open("sqlite:///tmp/audit.db"));
//   logger.log(message);                    // acquire + map + commit
//
//   if (auto r = logger.acquire()) {        // or fill a record by hand
//     r->sender = "alice";
//     r.commit();
//   }
//
// Templates stop here: a Logger is a Pipeline (compiled code working from the
// record type's descriptor) plus inline code that knows the record's C++
// type. The producer path takes a preallocated slot, fills it in place and
// queues a pointer to it: no allocation, no lock, no system call while the
// pool has free slots.
//
// Thread safety: every member may be called from any thread. A Handle
// belongs to one thread at a time; it may outlive its Logger (its commit()
// then returns Status::closed), but must not be given back while another
// thread is destroying the Logger.
#pragma once

#include <chrono>
#include <memory>
#include <new>
#include <utility>

#include "auditpipe/mapping.h"
#include "auditpipe/options.h"
#include "auditpipe/pipeline.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"
#include "auditpipe/table.h"

namespace auditpipe {

/// The front door: a typed logger of Record, which describe() and map_fields() declare (see the
/// file's comment and table.h, mapping.h).
template <class Record>
class Logger {
 public:
  /// An acquired record. Commit it, or let it go out of scope to give the
  /// slot back unwritten.
  class Handle {
   public:
    Handle() = default;
    /// Takes over other's record; other is left empty.
    Handle(Handle&& other) noexcept
        : engine_(other.engine_),
          record_(std::exchange(other.record_, nullptr)),
          status_(other.status_) {}
    /// Gives back the record held (uncommitted), then takes over other's.
    Handle& operator=(Handle&& other) noexcept {
      if (this != &other) {
        reset();
        engine_ = other.engine_;
        record_ = std::exchange(other.record_, nullptr);
        status_ = other.status_;
      }
      return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { reset(); }

    /// True while it holds a record.
    explicit operator bool() const noexcept { return record_ != nullptr; }
    /// The record, to fill.
    Record* operator->() const noexcept { return record_; }
    /// The record, to fill.
    Record& operator*() const noexcept { return *record_; }
    /// The record, or nullptr when empty.
    Record* get() const noexcept { return record_; }
    /// Why the handle is empty (Status::ok while it holds a record).
    Status status() const noexcept { return status_; }

    /// Queues the record for writing; the handle is empty afterwards.
    Status commit() noexcept {
      if (record_ == nullptr) return Status::empty_handle;
      Record* r = std::exchange(record_, nullptr);
      return Pipeline::commit(engine_, reinterpret_cast<std::byte*>(r));
    }

    /// Gives the record back unwritten; the handle is empty afterwards.
    void reset() noexcept {
      if (record_ != nullptr)
        Pipeline::abandon(engine_, reinterpret_cast<std::byte*>(std::exchange(record_, nullptr)));
    }

   private:
    friend class Logger;
    Handle(Pipeline::Engine* engine, Record* record, Status status) noexcept
        : engine_(engine), record_(record), status_(status) {}

    /// The engine, not the Pipeline: a Handle may outlive its Logger (then
    /// commit() returns Status::closed and letting go is safe).
    Pipeline::Engine* engine_ = nullptr;
    Record* record_ = nullptr;
    Status status_ = Status::empty_handle;
  };

  /// Opens the sink (creating or checking the table) and starts the writers.
  /// Throws auditpipe::error if the options are invalid, the sink cannot
  /// be opened, it serves another logger already (a sink serves one), or a
  /// thread cannot be started (a limit on threads or memory).
  explicit Logger(std::shared_ptr<Sink> sink, const Options& options = {})
      : pipeline_(descriptor_of<Record>(), std::move(sink), options) {}

  /// A record to fill, or an empty handle whose status() says why (the
  /// overflow policy decides what happens when the pool is full).
  Handle acquire() noexcept {
    Status status = Status::ok;
    std::byte* bytes = pipeline_.acquire(&status);
    return Handle(pipeline_.engine(),
                  bytes ? std::launder(reinterpret_cast<Record*>(bytes)) : nullptr, status);
  }

  /// handle.commit().
  Status commit(Handle&& handle) noexcept { return handle.commit(); }

  /// Acquire, copy `source` in through its declared mapping, commit.
  template <class Source>
  Status log(const Source& source) noexcept {
    static_assert(mapped<Source, Record>,
                  "auditpipe: no mapping from this type to the record; declare "
                  "`constexpr auto map_fields(auditpipe::type_tag<Source>, "
                  "auditpipe::type_tag<Record>)` returning auditpipe::mapping(...), or pass a "
                  "mapping to log(source, mapping)");
    return log(source, mapping_of<Source, Record>);
  }

  /// Acquire, copy `source` in through `mapping`, commit.
  template <class Source, class... Fields>
  Status log(const Source& source, const Mapping<Fields...>& mapping) noexcept {
    Status status = Status::ok;
    const Pipeline::Claim claim = pipeline_.claim(&status);
    if (claim.record == nullptr) return status;
    mapping.apply(source, *std::launder(reinterpret_cast<Record*>(claim.record)));
    return pipeline_.commit(claim);
  }

  /// Waits up to `timeout` for every record committed before the call to be
  /// written. True if all were.
  bool flush(std::chrono::milliseconds timeout) {
    return pipeline_.flush(Pipeline::deadline_after(timeout));
  }

  /// Stops intake and drains, for at most Options::close_timeout (or the
  /// given timeout); the report counts what could not be written.
  CloseReport close() { return close(pipeline_.options().close_timeout); }
  /// close() with a deadline `timeout` from now instead of Options::close_timeout.
  CloseReport close(std::chrono::milliseconds timeout) {
    return pipeline_.close(Pipeline::deadline_after(timeout));
  }

  /// A snapshot of the counters, gauges and histograms (see Stats).
  Stats stats() const { return pipeline_.stats(); }
  /// The options it was made with.
  const Options& options() const noexcept { return pipeline_.options(); }

 private:
  Pipeline pipeline_;
};

}  // namespace auditpipe
