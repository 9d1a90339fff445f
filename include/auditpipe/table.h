// Declaring a record type's table, at compile time.
//
// Next to the record struct, in the same namespace, write:
//
//   struct AuditRow {
//     auditpipe::timestamp at;
//     std::int64_t message_id = 0;
//     auditpipe::fixed_string<32> sender;
//   };
//   constexpr auto describe(auditpipe::type_tag<AuditRow>) {
//     return auditpipe::table<AuditRow>("audit_log",
//                                       AUDITPIPE_COLUMN(AuditRow, at),
//                                       AUDITPIPE_COLUMN(AuditRow, message_id),
//                                       AUDITPIPE_COLUMN(AuditRow, sender));
//   }
//
// Each AUDITPIPE_COLUMN binds a member pointer to a column name (the member's
// own name, or another with AUDITPIPE_COLUMN_AS) and records its offset, size
// and SQL-neutral type. The result is a constexpr table; descriptor_of<R>()
// turns it into the type-erased TableDescriptor the rest of auditpipe uses.
// A member declared auditpipe::nullable<T> (nullable.h) is a T column that
// may be NULL. Member types auditpipe cannot store, duplicate or reserved
// column names, and names that are not plain SQL identifiers are compile
// errors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "auditpipe/column.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/nullable.h"
#include "auditpipe/timestamp.h"

namespace auditpipe {

/// Names a type in an overload of describe() / mapping functions, found by
/// argument-dependent lookup in the type's own namespace.
template <class T>
struct type_tag {};

namespace detail {
template <class>
inline constexpr bool always_false = false;
}  // namespace detail

/// What a member type becomes as a column. The primary template is the error
/// for every type auditpipe does not store.
template <class M>
struct column_traits {
  static_assert(detail::always_false<M>,
                "auditpipe: this member type cannot be a column. Use bool, std::int8_t..int64_t, "
                "std::uint8_t..uint32_t, double, auditpipe::timestamp or "
                "auditpipe::fixed_string<N> (no pointers, std::string or containers: records "
                "are fixed-size and trivially copyable).");
};
/// Integers of every width; only 64-bit unsigned is refused.
template <class M>
requires(std::is_integral_v<M> && !std::is_same_v<M, bool>) struct column_traits<M> {
  static_assert(std::is_signed_v<M> || sizeof(M) < 8,
                "auditpipe: 64-bit unsigned columns are not supported because SQL BIGINT is "
                "signed in SQLite and PostgreSQL; use std::int64_t.");
  /// The column type of M.
  static constexpr ColumnType type = std::is_signed_v<M> ? (sizeof(M) == 1   ? ColumnType::int8
                                                            : sizeof(M) == 2 ? ColumnType::int16
                                                            : sizeof(M) == 4 ? ColumnType::int32
                                                                             : ColumnType::int64)
                                                         : (sizeof(M) == 1   ? ColumnType::uint8
                                                            : sizeof(M) == 2 ? ColumnType::uint16
                                                                             : ColumnType::uint32);
  /// 0: not text.
  static constexpr std::uint32_t max_length = 0;
};

#define AUDITPIPE_DETAIL_SCALAR(cpp_type, column_type)          \
  template <>                                                   \
  struct column_traits<cpp_type> {                              \
    static constexpr ColumnType type = ColumnType::column_type; \
    static constexpr std::uint32_t max_length = 0;              \
  }
AUDITPIPE_DETAIL_SCALAR(bool, boolean);
AUDITPIPE_DETAIL_SCALAR(double, float64);
AUDITPIPE_DETAIL_SCALAR(timestamp, timestamp);
#undef AUDITPIPE_DETAIL_SCALAR

/// Text columns: fixed_string<N>.
template <std::size_t N>
struct column_traits<fixed_string<N>> {
  /// ColumnType::text.
  static constexpr ColumnType type = ColumnType::text;
  /// N bytes.
  static constexpr std::uint32_t max_length = static_cast<std::uint32_t>(N);
};

/// A nullable<T> is a T column that may be NULL (column.h: Column::nullable).
template <class T>
struct column_traits<nullable<T>> {
  static_assert(!is_nullable_v<T>, "auditpipe: nullable<nullable<T>> is not a column type");
  static constexpr ColumnType type = column_traits<T>::type;                 ///< T's
  static constexpr std::uint32_t max_length = column_traits<T>::max_length;  ///< T's
};

namespace detail {

template <class P>
struct member_pointer;
template <class C, class M>
struct member_pointer<M C::*> {
  using class_type = C;
  using member_type = M;
};

/// Called only when a check fails during constant evaluation: being
/// non-constexpr, it makes the compiler stop and print its name.
void auditpipe_error_column_name_is_not_a_plain_sql_identifier();
void auditpipe_error_table_name_is_not_a_plain_sql_identifier();
void auditpipe_error_column_names_must_be_unique();
void auditpipe_error_source_id_and_seq_are_reserved_column_names();
void auditpipe_error_a_table_needs_at_least_one_column();

constexpr bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;  // 64: MySQL's identifier limit
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (digit && i > 0))) return false;
  }
  return true;
}

constexpr bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

template <class Record, auto Member>
consteval Column make_column(std::string_view name, std::size_t offset) {
  using traits = member_pointer<decltype(Member)>;
  static_assert(std::is_same_v<typename traits::class_type, Record>,
                "auditpipe: AUDITPIPE_COLUMN names a member of another type");
  using M = std::remove_cv_t<typename traits::member_type>;
  if (!is_identifier(name)) auditpipe_error_column_name_is_not_a_plain_sql_identifier();
  if constexpr (is_nullable_v<M>) {
    using T = typename M::value_type;
    return Column{name,
                  column_traits<M>::type,
                  static_cast<std::uint32_t>(offset + nullable_layout<T>::value_offset),
                  static_cast<std::uint32_t>(sizeof(T)),
                  column_traits<M>::max_length,
                  true,
                  static_cast<std::uint32_t>(offset + nullable_layout<T>::presence_offset),
                  0};
  } else {
    return Column{name,
                  column_traits<M>::type,
                  static_cast<std::uint32_t>(offset),
                  static_cast<std::uint32_t>(sizeof(M)),
                  column_traits<M>::max_length,
                  false,
                  0,
                  0};
  }
}

}  // namespace detail

/// A record type's table: its name and its columns, as compile-time values.
template <class Record, std::size_t N>
struct Table {
  /// The table's name.
  std::string_view name;
  /// Its columns, in declaration order.
  std::array<Column, N> columns;
};

/// The table of Record, from its name and AUDITPIPE_COLUMN(Record, member)s, checked at compile
/// time (types, names, duplicates, reserved names); what describe() returns.
template <class Record, class... Columns>
consteval Table<Record, sizeof...(Columns)> table(std::string_view name, Columns... columns) {
  static_assert(std::is_trivially_copyable_v<Record>,
                "auditpipe: a record type must be trivially copyable (records are copied as "
                "bytes between the pool, the queue and the sinks)");
  static_assert(std::is_standard_layout_v<Record>,
                "auditpipe: a record type must be standard-layout (columns are read by offset)");
  static_assert(std::is_default_constructible_v<Record>,
                "auditpipe: a record type must be default-constructible (freed slots are reset "
                "to a default record)");
  static_assert((std::is_same_v<Columns, Column> && ...),
                "auditpipe: table() takes AUDITPIPE_COLUMN(...) entries");
  Table<Record, sizeof...(Columns)> t{name, {columns...}};
  if (!detail::is_identifier(name))
    detail::auditpipe_error_table_name_is_not_a_plain_sql_identifier();
  if (t.columns.empty()) detail::auditpipe_error_a_table_needs_at_least_one_column();
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (detail::same_name(t.columns[i].name, source_id_column) ||
        detail::same_name(t.columns[i].name, seq_column)) {
      detail::auditpipe_error_source_id_and_seq_are_reserved_column_names();
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (detail::same_name(t.columns[i].name, t.columns[j].name)) {
        detail::auditpipe_error_column_names_must_be_unique();
      }
    }
  }
  return t;
}

/// Whether a record type has a describe() overload.
template <class Record>
concept described = requires {
  describe(type_tag<Record>{});
};

/// The compile-time table of a described record type.
template <class Record>
inline constexpr auto table_of = describe(type_tag<Record>{});

namespace detail {
template <class Record>
inline const Record prototype_of{};
}  // namespace detail

/// The type-erased descriptor of a described record type; one per type.
template <class Record>
const TableDescriptor& descriptor_of() {
  static_assert(described<Record>,
                "auditpipe: declare `constexpr auto describe(auditpipe::type_tag<Record>)` in the "
                "record type's namespace, returning auditpipe::table<Record>(...)");
  static const TableDescriptor descriptor{
      table_of<Record>.name,
      std::span<const Column>(table_of<Record>.columns.data(), table_of<Record>.columns.size()),
      static_cast<std::uint32_t>(sizeof(Record)), static_cast<std::uint32_t>(alignof(Record)),
      reinterpret_cast<const std::byte*>(&detail::prototype_of<Record>)};
  return descriptor;
}

}  // namespace auditpipe

// One column: the member `member` of `Record`, named after the member.
#define AUDITPIPE_COLUMN(Record, member) \
  ::auditpipe::detail::make_column<Record, &Record::member>(#member, offsetof(Record, member))

// One column with a name other than the member's.
#define AUDITPIPE_COLUMN_AS(Record, member, column_name) \
  ::auditpipe::detail::make_column<Record, &Record::member>(column_name, offsetof(Record, member))
