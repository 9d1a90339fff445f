// nullable<T>: a record member that may be SQL NULL.
//
// An audit trail must not confuse "no value" with a real empty string or a
// real zero, so a column that can be absent is declared nullable<T> and is
// written as SQL NULL when empty. Records are byte images copied between the
// pool, the queue, spill files and the sinks, so this is not std::optional
// (which is not guaranteed trivially copyable or standard-layout): it is the
// value followed by a presence byte, both plain data. Assigning is a plain
// store of the value and the flag: nothing on the producer's path costs more
// than for a T member.
//
// Layout (relied on by the descriptor, which readers use without knowing
// T): the T at offset 0, so every reader of a T column reads the value
// where it reads any other, then a bool, 1 when a value is present, at
// nullable_layout<T>::presence_offset.
//
// T is any column type: the integers, bool, double, auditpipe::timestamp,
// auditpipe::fixed_string<N>. A default-constructed nullable is NULL; a
// record that wants another default says so (`nullable<int> n = 5;`).
//
// Who may call: record types declare members of it; mapping.h fills them;
// table.h describes them. Thread safety: a plain value.
#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>

#include "auditpipe/fixed_string.h"

namespace auditpipe {

template <class T>
struct nullable_layout;

/// A record member that may be SQL NULL: a T and a presence byte (see the
/// file comment).
template <class T>
class nullable {
 public:
  using value_type = T;  ///< the column's type when a value is present

  /// NULL.
  constexpr nullable() noexcept = default;
  /// NULL: `= std::nullopt` reads as SQL's NULL.
  constexpr nullable(std::nullopt_t) noexcept {}  // NOLINT
  /// A value. Implicit on purpose, like a T member: `record.amount = 12.5;`.
  template <class U>
  requires std::is_constructible_v<T, const U&>
  constexpr nullable(const U& v) noexcept : value_(v), present_(true) {}  // NOLINT

  /// Text; a null C string is NULL (not an empty, counted text as for a
  /// plain fixed_string member): the column can say so.
  constexpr nullable(const char* text) noexcept  // NOLINT
      requires std::is_constructible_v<T, const char*> {
    assign_text(text);
  }

  /// Stores a value: present from now on.
  template <class U>
  requires std::is_assignable_v<T&, const U&>
  constexpr nullable& operator=(const U& v) noexcept {
    value_ = v;
    present_ = true;
    return *this;
  }
  /// Stores text; a null C string makes it NULL.
  constexpr nullable& operator=(
      const char* text) noexcept requires std::is_assignable_v<T&, const char*> {
    assign_text(text);
    return *this;
  }
  /// Makes it NULL.
  constexpr nullable& operator=(std::nullopt_t) noexcept {
    present_ = false;
    return *this;
  }

  /// Makes it NULL. The value's bytes stay as they were: no reader looks at
  /// them while the presence byte is 0.
  constexpr void reset() noexcept { present_ = false; }
  /// The value, present from now on, for callers that fill it in place
  /// (e.g. fixed_string::assign()).
  constexpr T& emplace() noexcept {
    present_ = true;
    return value_;
  }

  /// Whether a value is present (the column is not NULL).
  constexpr bool has_value() const noexcept { return present_; }
  /// has_value().
  constexpr explicit operator bool() const noexcept { return present_; }
  /// The value; meaningful only while has_value().
  constexpr const T& operator*() const noexcept { return value_; }
  /// The value's members; meaningful only while has_value().
  constexpr const T* operator->() const noexcept { return &value_; }
  /// The value if present, else `fallback` as a T.
  template <class U>
  constexpr T value_or(const U& fallback) const noexcept {
    return present_ ? value_ : T(fallback);
  }

  /// True if NULL.
  friend constexpr bool operator==(const nullable& a, std::nullopt_t) noexcept {
    return !a.present_;
  }

 private:
  template <class>
  friend struct nullable_layout;

  constexpr void assign_text(const char* text) noexcept {
    if (text == nullptr) {
      present_ = false;
    } else {
      value_ = text;
      present_ = true;
    }
  }

  T value_{};
  bool present_ = false;
};

/// Where a nullable<T>'s parts sit, for table.h's descriptor.
template <class T>
struct nullable_layout {
  static_assert(std::is_trivially_copyable_v<nullable<T>> && std::is_standard_layout_v<nullable<T>>,
                "auditpipe::nullable<T> must stay a plain byte image");
  static constexpr std::size_t value_offset = offsetof(nullable<T>, value_);  ///< always 0
  /// The presence byte: 1 when a value is present.
  static constexpr std::size_t presence_offset = offsetof(nullable<T>, present_);
  static_assert(value_offset == 0, "readers of a T column read the value at the member's offset");
};

/// Whether T is a nullable<...> (cv-qualifiers ignored by is_nullable_v).
template <class T>
struct is_nullable : std::false_type {};
template <class T>
struct is_nullable<nullable<T>> : std::true_type {};
/// is_nullable<T>::value, cv-qualifiers removed.
template <class T>
inline constexpr bool is_nullable_v = is_nullable<std::remove_cv_t<T>>::value;

}  // namespace auditpipe
