// The type-erased description of a record type: what every part of auditpipe
// behind the front door (writer, sinks, spill file) works from.
//
// A TableDescriptor says, per column, its name, its SQL-neutral type, and
// where its bytes sit inside a record. It never names the user's C++ type, so
// the writer and sinks are ordinary compiled code. Descriptors are built at
// compile time by auditpipe::table() (see table.h).
//
// Every record also carries two columns that are not in the descriptor:
// `source_id` and `seq`, stamped at commit; tables get a unique key on them.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "auditpipe/export.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/timestamp.h"

namespace auditpipe {

/// The SQL-neutral type of a record column; each sink's dialect maps it to its own.
enum class ColumnType : std::uint8_t {
  boolean,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  float64,
  timestamp,  ///< auditpipe::timestamp, microseconds since the epoch
  text,       ///< auditpipe::fixed_string<N>, max_length = N bytes of UTF-8
};

/// The type's name, for messages.
AUDITPIPE_EXPORT std::string_view to_string(ColumnType type) noexcept;

/// True for the integer types (bool included).
constexpr bool is_integer(ColumnType t) noexcept {
  return t == ColumnType::boolean || t == ColumnType::int8 || t == ColumnType::int16 ||
         t == ColumnType::int32 || t == ColumnType::int64 || t == ColumnType::uint8 ||
         t == ColumnType::uint16 || t == ColumnType::uint32;
}

/// One column of a record: its name, type and where its bytes are.
struct AUDITPIPE_EXPORT Column {
  /// The column's name, a plain SQL identifier.
  std::string_view name;
  /// Its SQL-neutral type.
  ColumnType type;
  std::uint32_t offset;      ///< of the member inside the record, in bytes
  std::uint32_t size;        ///< sizeof the member
  std::uint32_t max_length;  ///< text: capacity in bytes; otherwise 0
  /// An auditpipe::nullable<T> member: `offset` and `size` are its value's
  /// (read as any T column's), and the byte at `presence_offset` inside the
  /// record is 1 when a value is present, 0 for SQL NULL.
  bool nullable = false;
  std::uint32_t presence_offset = 0;  ///< nullable: where its presence byte is
  /// Text: at most this many characters (code points) besides max_length's
  /// bytes, for a column the database sizes in characters (a runtime schema
  /// read from a VARCHAR(n) column: n characters, up to 4n bytes); 0: bytes only.
  std::uint32_t max_chars = 0;
};

/// The names of the two columns every table gets in addition to the record's.
inline constexpr std::string_view source_id_column = "source_id";
/// See source_id_column.
inline constexpr std::string_view seq_column = "seq";

/// A record type, type-erased: its table's name and columns, and the record's size. Built by
/// auditpipe::table() (table.h).
struct AUDITPIPE_EXPORT TableDescriptor {
  /// The table's name.
  std::string_view name;
  /// The record's columns, in declaration order (source_id and seq not among them).
  std::span<const Column> columns;
  /// sizeof the record.
  std::uint32_t record_size;
  /// alignof the record.
  std::uint32_t record_align;
  /// A default-constructed record: freed slots are reset to these bytes so a
  /// record never shows fields left over from an earlier one.
  const std::byte* prototype;
};

// Readers of one column of one record, by the column's description. Bytes
// are copied with memcpy: records are byte images, never aliased objects.

namespace detail {
template <class T>
inline T load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
}  // namespace detail

/// Whether column `c` of `record` is SQL NULL. Every writer of a value asks
/// this first; a NULL's value bytes are never read.
inline bool is_null(const std::byte* record, const Column& c) noexcept {
  return c.nullable && record[c.presence_offset] == std::byte{0};
}

/// Integer-like columns (booleans, integers, timestamps) widened to int64.
inline std::int64_t read_integer(const std::byte* record, const Column& c) noexcept {
  const std::byte* p = record + c.offset;
  switch (c.type) {
    case ColumnType::boolean:
      return detail::load<bool>(p) ? 1 : 0;
    case ColumnType::int8:
      return detail::load<std::int8_t>(p);
    case ColumnType::int16:
      return detail::load<std::int16_t>(p);
    case ColumnType::int32:
      return detail::load<std::int32_t>(p);
    case ColumnType::uint8:
      return detail::load<std::uint8_t>(p);
    case ColumnType::uint16:
      return detail::load<std::uint16_t>(p);
    case ColumnType::uint32:
      return detail::load<std::uint32_t>(p);
    case ColumnType::int64:
    case ColumnType::timestamp:
      return detail::load<std::int64_t>(p);
    default:
      return 0;
  }
}

/// A float64 column's value in `record`.
inline double read_float64(const std::byte* record, const Column& c) noexcept {
  return detail::load<double>(record + c.offset);
}

/// A text column's text in `record` (never longer than its capacity, even in a damaged record).
inline std::string_view read_text(const std::byte* record, const Column& c) noexcept {
  std::uint32_t size = detail::load<std::uint32_t>(record + c.offset + text_layout::size_offset);
  if (size > c.max_length) size = c.max_length;  // a damaged record never reads out of bounds
  return {reinterpret_cast<const char*>(record + c.offset + text_layout::data_offset), size};
}

/// A text column's flag word (text_flags) in `record`.
inline std::uint32_t read_text_flags(const std::byte* record, const Column& c) noexcept {
  return detail::load<std::uint32_t>(record + c.offset + text_layout::flags_offset);
}

}  // namespace auditpipe
