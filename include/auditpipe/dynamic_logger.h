// DynamicLogger: Logger's door for a runtime Schema, filled by column index.
//
//   auditpipe::DynamicLogger logger(schema, auditpipe::open(url));
//   if (auto r = logger.acquire()) {
//     r.set_timestamp(0, auditpipe::timestamp::now());
//     r.set_text(1, user);          // cut at a UTF-8 boundary, counted
//     r.set_null(2);
//     r.commit();                   // or r.commit(source_id, seq)
//   }
//
// The producer path is Logger's: a preallocated slot from the pool, set in
// place, queued by pointer; no allocation. commit(source_id, seq) gives the
// record an identity of the caller's instead of the thread's next one, for
// records whose identity comes from their input (a file and the record's
// place in it), so that loading the same input twice stores each record
// once. A caller mixing both kinds must keep its source_ids apart from the
// pipeline's (Options::source_id_base).
//
// Setters check nothing the caller already knows (the column index, the
// value's C++ type against the column's): an index out of range or a setter
// of another type is a programming error, caught by an assertion in debug
// builds. set_integer() returns false, leaving the column unchanged, for a
// value outside the column's type.
//
// Thread safety: as Logger. A Record belongs to one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "auditpipe/export.h"
#include "auditpipe/options.h"
#include "auditpipe/pipeline.h"
#include "auditpipe/schema.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"
#include "auditpipe/timestamp.h"

namespace auditpipe {

/// A logger of records described by a runtime Schema (see the file's comment).
class AUDITPIPE_EXPORT DynamicLogger {
 public:
  /// An acquired record, set by column index. Commit it, or let it go out of
  /// scope to give the slot back unwritten.
  class AUDITPIPE_EXPORT Record {
   public:
    Record() = default;
    /// Takes over other's record; other is left empty.
    Record(Record&& other) noexcept;
    /// Gives back the record held (uncommitted), then takes over other's.
    Record& operator=(Record&& other) noexcept;
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
    ~Record() { reset(); }

    /// True while it holds a record.
    explicit operator bool() const noexcept { return bytes_ != nullptr; }
    /// Why it is empty (Status::ok while it holds a record).
    Status status() const noexcept { return status_; }

    /// Column `column` (nullable) becomes SQL NULL.
    void set_null(std::size_t column) noexcept;
    /// A boolean column.
    void set_bool(std::size_t column, bool value) noexcept;
    /// An integer column of any width (bool included: 0 or 1); false if
    /// `value` does not fit the column's type (the column is unchanged).
    bool set_integer(std::size_t column, std::int64_t value) noexcept;
    /// A float64 column.
    void set_float64(std::size_t column, double value) noexcept;
    /// A timestamp column.
    void set_timestamp(std::size_t column, timestamp value) noexcept;
    /// A text column: cut at a UTF-8 boundary to the column's capacity (the
    /// writer counts the cut, and repairs invalid UTF-8, as for any record).
    /// Returns true if it was cut.
    bool set_text(std::size_t column, std::string_view value) noexcept;
    /// The record's bytes, laid out as the schema's descriptor says.
    std::byte* data() const noexcept { return bytes_; }

    /// Queues the record under the thread's next (source_id, seq).
    Status commit() noexcept;
    /// Queues the record under the caller's identity (see the file's comment).
    Status commit(std::int64_t source_id, std::int64_t seq) noexcept;
    /// Gives the record back unwritten.
    void reset() noexcept;

   private:
    friend class DynamicLogger;
    Record(const TableDescriptor* table, Pipeline::Engine* engine, std::byte* bytes,
           Status status) noexcept
        : table_(table), engine_(engine), bytes_(bytes), status_(status) {}

    const TableDescriptor* table_ = nullptr;
    Pipeline::Engine* engine_ = nullptr;
    std::byte* bytes_ = nullptr;
    Status status_ = Status::empty_handle;
  };

  /// Keeps a copy of `schema`, opens the sink (creating or checking the
  /// table) and starts the writers. Throws auditpipe::error as Logger does.
  DynamicLogger(const Schema& schema, std::shared_ptr<Sink> sink, const Options& options = {});

  /// A record to fill (holding the schema's defaults: zeros, empty text,
  /// NULL for nullable columns), or an empty one whose status() says why.
  Record acquire() noexcept;

  /// Waits up to `timeout` for every record committed before the call to be written.
  bool flush(std::chrono::milliseconds timeout) {
    return pipeline_.flush(Pipeline::clock::now() + timeout);
  }
  /// Stops intake and drains for at most Options::close_timeout.
  CloseReport close() { return close(pipeline_.options().close_timeout); }
  /// close() with a deadline `timeout` from now.
  CloseReport close(std::chrono::milliseconds timeout) {
    return pipeline_.close(Pipeline::clock::now() + timeout);
  }
  /// A snapshot of the counters, gauges and histograms.
  Stats stats() const { return pipeline_.stats(); }
  /// The options it was made with.
  const Options& options() const noexcept { return pipeline_.options(); }
  /// The schema it logs.
  const Schema& schema() const noexcept { return *schema_; }

 private:
  std::shared_ptr<const Schema> schema_;  ///< declared first: the pipeline reads its descriptor
  Pipeline pipeline_;
};

}  // namespace auditpipe
