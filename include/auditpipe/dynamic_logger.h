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
// An index out of range, a setter of another type than the column's, or
// set_null() of a column that is not nullable is a programming error: a
// debug build stops at its assertion; in a release build the setter writes
// nothing and commit() gives the record back (Status::wrong_setter, counted
// as abandoned). set_integer() returns false, leaving the column unchanged,
// for a value outside the column's type. Setting a nullable column's value
// makes it present; set_null() makes it NULL again.
//
// Thread safety: as Logger. A Record belongs to one thread at a time.
#pragma once

#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include "auditpipe/column.h"
#include "auditpipe/export.h"
#include "auditpipe/fixed_string.h"
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
    Record(Record&& other) noexcept
        : table_(other.table_),
          engine_(other.engine_),
          bytes_(std::exchange(other.bytes_, nullptr)),
          status_(other.status_),
          wrong_setter_(std::exchange(other.wrong_setter_, false)) {}
    /// Gives back the record held (uncommitted), then takes over other's.
    Record& operator=(Record&& other) noexcept {
      if (this != &other) {
        reset();
        table_ = other.table_;
        engine_ = other.engine_;
        bytes_ = std::exchange(other.bytes_, nullptr);
        status_ = other.status_;
        wrong_setter_ = std::exchange(other.wrong_setter_, false);
      }
      return *this;
    }
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
    ~Record() { reset(); }

    /// True while it holds a record.
    explicit operator bool() const noexcept { return bytes_ != nullptr; }
    /// Why it is empty (Status::ok while it holds a record).
    Status status() const noexcept { return status_; }

    /// Column `column` (nullable) becomes SQL NULL.
    void set_null(std::size_t column) noexcept {
      const Column* c = column_at(column);
      if (c == nullptr) return;
      assert(c->nullable && "auditpipe: set_null() of a column that is not nullable");
      if (!checked(c->nullable)) return;
      bytes_[c->presence_offset] = std::byte{0};
    }
    /// A boolean column.
    void set_bool(std::size_t column, bool value) noexcept {
      const Column* c = column_at(column);
      if (c == nullptr) return;
      assert(c->type == ColumnType::boolean && "auditpipe: set_bool() of a non-boolean column");
      if (checked(c->type == ColumnType::boolean)) store(*c, value);
    }
    /// An integer column of any width (bool included: 0 or 1); false if
    /// `value` does not fit the column's type (the column is unchanged).
    bool set_integer(std::size_t column, std::int64_t value) noexcept {
      const Column* column_ptr = column_at(column);
      if (column_ptr == nullptr) return false;
      const Column& c = *column_ptr;
      assert(is_integer(c.type) && "auditpipe: set_integer() of a column that is not an integer");
      if (!checked(is_integer(c.type))) return false;
      switch (c.type) {
        case ColumnType::boolean:
          if (value != 0 && value != 1) return false;
          store(c, value == 1);
          return true;
        case ColumnType::int8:
          return store_if_fits<std::int8_t>(c, value);
        case ColumnType::int16:
          return store_if_fits<std::int16_t>(c, value);
        case ColumnType::int32:
          return store_if_fits<std::int32_t>(c, value);
        case ColumnType::int64:
          store(c, value);
          return true;
        case ColumnType::uint8:
          return store_if_fits<std::uint8_t>(c, value);
        case ColumnType::uint16:
          return store_if_fits<std::uint16_t>(c, value);
        case ColumnType::uint32:
          return store_if_fits<std::uint32_t>(c, value);
        default:
          return false;
      }
    }
    /// A float64 column.
    void set_float64(std::size_t column, double value) noexcept {
      const Column* c = column_at(column);
      if (c == nullptr) return;
      assert(c->type == ColumnType::float64 && "auditpipe: set_float64() of a non-float64 column");
      if (checked(c->type == ColumnType::float64)) store(*c, value);
    }
    /// A timestamp column.
    void set_timestamp(std::size_t column, timestamp value) noexcept {
      const Column* c = column_at(column);
      if (c == nullptr) return;
      assert(c->type == ColumnType::timestamp &&
             "auditpipe: set_timestamp() of a non-timestamp column");
      if (checked(c->type == ColumnType::timestamp)) store(*c, value);
    }
    /// A text column: cut at a UTF-8 boundary to the column's capacity, and
    /// to its characters where it has a limit of them (the writer counts the
    /// cut, and repairs invalid UTF-8, as for any record). Returns true if it
    /// was cut.
    bool set_text(std::size_t column, std::string_view value) noexcept {
      const Column* column_ptr = column_at(column);
      if (column_ptr == nullptr) return false;
      const Column& c = *column_ptr;
      assert(c.type == ColumnType::text && "auditpipe: set_text() of a non-text column");
      if (!checked(c.type == ColumnType::text)) return false;
      // What fixed_string<N>::assign() does, with N the column's capacity.
      std::size_t n = utf8_prefix_length(value, c.max_length);
      if (c.max_chars != 0 && n > c.max_chars)
        n = utf8_prefix_chars(value.substr(0, n), c.max_chars);
      std::byte* field = bytes_ + c.offset;
      detail::copy_text(reinterpret_cast<char*>(field + text_layout::data_offset), value.data(), n);
      const auto size = static_cast<std::uint32_t>(n);
      const std::uint32_t flags = n < value.size() ? text_flags::truncated : 0u;
      std::memcpy(field + text_layout::size_offset, &size, sizeof size);
      std::memcpy(field + text_layout::flags_offset, &flags, sizeof flags);
      if (c.nullable) bytes_[c.presence_offset] = std::byte{1};
      return n < value.size();
    }
    /// The record's bytes, laid out as the schema's descriptor says.
    std::byte* data() const noexcept { return bytes_; }

    /// Queues the record under the thread's next (source_id, seq); the
    /// record is empty afterwards.
    Status commit() noexcept {
      if (bytes_ == nullptr) return Status::empty_handle;
      if (wrong_setter_) return give_back_misset();
      return Pipeline::commit(engine_, std::exchange(bytes_, nullptr));
    }
    /// Queues the record under the caller's identity (see the file's
    /// comment); the record is empty afterwards.
    Status commit(std::int64_t source_id, std::int64_t seq) noexcept {
      if (bytes_ == nullptr) return Status::empty_handle;
      if (wrong_setter_) return give_back_misset();
      return Pipeline::commit(engine_, std::exchange(bytes_, nullptr), source_id, seq);
    }
    /// Gives the record back unwritten.
    void reset() noexcept {
      wrong_setter_ = false;
      if (bytes_ != nullptr) Pipeline::abandon(engine_, std::exchange(bytes_, nullptr));
    }

   private:
    friend class DynamicLogger;
    Record(const TableDescriptor* table, Pipeline::Engine* engine, std::byte* bytes,
           Status status) noexcept
        : table_(table), engine_(engine), bytes_(bytes), status_(status) {}

    // The column a setter names, or nullptr (nothing is written) for an
    // empty record or an index out of range. A setter given a column of
    // another type writes nothing either (checked()). Both are programming
    // errors, which debug builds stop at; in a release build such a record
    // is given back at commit(), never stored without the value or with a
    // neighbour's bytes overwritten.
    const Column* column_at(std::size_t column) noexcept {
      assert(bytes_ != nullptr && "auditpipe: a setter of an empty DynamicLogger::Record");
      assert(column < table_->columns.size() && "auditpipe: column index out of range");
      if (bytes_ == nullptr) return nullptr;
      if (column >= table_->columns.size()) {
        wrong_setter_ = true;
        return nullptr;
      }
      return &table_->columns[column];
    }
    bool checked(bool right_setter) noexcept {
      if (!right_setter) wrong_setter_ = true;
      return right_setter;
    }
    Status give_back_misset() noexcept {
      reset();
      status_ = Status::wrong_setter;
      return status_;
    }
    template <class T>
    void store(const Column& c, const T& value) noexcept {
      static_assert(std::is_trivially_copyable_v<T>);
      assert(c.size == sizeof(T) && "auditpipe: a setter of another size than the column's");
      std::memcpy(bytes_ + c.offset, &value, sizeof(T));
      if (c.nullable) bytes_[c.presence_offset] = std::byte{1};
    }
    template <class T>
    bool store_if_fits(const Column& c, std::int64_t value) noexcept {
      if (value < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          value > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
        return false;
      }
      store(c, static_cast<T>(value));
      return true;
    }

    /// The schema's descriptor: kept alive by the engine, which outlives
    /// every record it handed out (the DynamicLogger gives the engine the
    /// schema to keep).
    const TableDescriptor* table_ = nullptr;
    Pipeline::Engine* engine_ = nullptr;
    std::byte* bytes_ = nullptr;
    Status status_ = Status::empty_handle;
    bool wrong_setter_ = false;
  };

  /// Keeps a copy of `schema`, opens the sink (creating or checking the
  /// table) and starts the writers. Throws auditpipe::error as Logger does.
  DynamicLogger(const Schema& schema, std::shared_ptr<Sink> sink, const Options& options = {});
  /// The same, sharing `schema` rather than copying it.
  DynamicLogger(std::shared_ptr<const Schema> schema, std::shared_ptr<Sink> sink,
                const Options& options = {});

  /// A record to fill (holding the schema's defaults: zeros, empty text,
  /// NULL for nullable columns), or an empty one whose status() says why.
  Record acquire() noexcept {
    Status status = Status::ok;
    std::byte* bytes = pipeline_.acquire(&status);
    return Record(&pipeline_.table(), pipeline_.engine(), bytes, status);
  }

  /// Waits up to `timeout` for every record committed before the call to be written.
  bool flush(std::chrono::milliseconds timeout) {
    return pipeline_.flush(Pipeline::deadline_after(timeout));
  }
  /// Stops intake and drains for at most Options::close_timeout.
  CloseReport close() { return close(pipeline_.options().close_timeout); }
  /// close() with a deadline `timeout` from now.
  CloseReport close(std::chrono::milliseconds timeout) {
    return pipeline_.close(Pipeline::deadline_after(timeout));
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
