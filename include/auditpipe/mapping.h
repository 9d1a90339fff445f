// Mapping a caller's own type onto a record, resolved at compile time.
//
// The lesson of a reflection-based bean copy that made ~40 temporary strings
// per message: the copy from the caller's type into the record must be what a
// hand-written one would be. A mapping is a constexpr list of member-pointer
// pairs; applying it is a fold over that list, with each pair's conversion
// chosen at compile time. Nothing is looked up by name at run time and no
// temporary is made (strings are copied straight into the record's inline
// bytes).
//
//   constexpr auto map_fields(auditpipe::type_tag<SubMessage>, auditpipe::type_tag<AuditRow>) {
//     return auditpipe::mapping(auditpipe::field(&SubMessage::id, &AuditRow::message_id),
//                               auditpipe::field(&SubMessage::from, &AuditRow::sender),
//                               auditpipe::stamp_now(&AuditRow::at));
//   }
//
// A record member declared auditpipe::nullable<T> is filled from a
// std::optional<U> or nullable<U> source (empty: NULL), from a pointer
// (nullptr: NULL; a `const char*` into nullable text is a C string, null:
// NULL) or from a plain U (never NULL). A member that cannot be NULL filled
// from a source that can be empty is a compile error (check_emptiness).
//
// With that overload next to either type, logger.log(message) does acquire,
// map and commit. A mapping can also be passed explicitly: logger.log(m, map).
#pragma once

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "auditpipe/fixed_string.h"
#include "auditpipe/nullable.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"

namespace auditpipe {

namespace detail {

template <class T>
struct is_fixed_string : std::false_type {};
template <std::size_t N>
struct is_fixed_string<fixed_string<N>> : std::true_type {};

// Sources that may hold no value: std::optional<U> and nullable<U>.
template <class T>
struct maybe_empty : std::false_type {};
template <class U>
struct maybe_empty<std::optional<U>> : std::true_type {
  using value_type = U;
};
template <class U>
struct maybe_empty<nullable<U>> : std::true_type {
  using value_type = U;
};

// A pointer source for a nullable member: nullptr is NULL. Character
// pointers into a text member are C strings, not pointers to one char.
template <class D, class S>
constexpr bool is_pointer_source() {
  if constexpr (!std::is_pointer_v<S>) {
    return false;
  } else {
    return !(is_fixed_string<D>::value && std::is_convertible_v<const S&, const char*>);
  }
}

// Every value of integer (or enum) S fits in integer D: a narrowing copy
// wrapped (300 into a std::uint8_t member stored 44, -1 stored 255) with
// no error and no counter.
template <class D, class S>
constexpr bool integer_fits() {
  if constexpr (std::is_enum_v<S>) {
    // An unscoped enum's underlying type is the compiler's choice (unsigned
    // int for `enum Kind {a, b}`): its width is what counts.
    using U = std::underlying_type_t<S>;
    return (!std::is_signed_v<U> || std::is_signed_v<D>)&&sizeof(U) <= sizeof(D);
  } else if constexpr (std::is_signed_v<S> && !std::is_signed_v<D>) {
    return false;
  } else {
    return std::numeric_limits<S>::digits <= std::numeric_limits<D>::digits;
  }
}

template <class D, class S>
constexpr bool assignable_value() {
  if constexpr (is_fixed_string<D>::value) {
    return std::is_convertible_v<const S&, std::string_view>;
  } else if constexpr (std::is_same_v<D, timestamp>) {
    return std::is_same_v<S, timestamp> ||
           std::is_convertible_v<const S&, std::chrono::system_clock::time_point>;
  } else if constexpr (std::is_same_v<D, bool>) {
    return std::is_same_v<S, bool>;
  } else if constexpr (std::is_integral_v<D>) {
    // Integers and enums whose every value fits; floating point would be
    // silently truncated, a wider integer silently wrapped.
    if constexpr ((std::is_integral_v<S> && !std::is_same_v<S, bool>) || std::is_enum_v<S>) {
      return integer_fits<D, S>();
    } else {
      return false;
    }
  } else if constexpr (std::is_floating_point_v<D>) {
    // Numbers it holds exactly: a 64-bit integer past 2^53 was rounded
    // (9007199254740993 stored as ...992) with no error and no counter.
    if constexpr (std::is_arithmetic_v<S> && !std::is_same_v<S, bool>) {
      return std::numeric_limits<S>::digits <= std::numeric_limits<D>::digits;
    } else {
      return false;
    }
  } else {
    return false;
  }
}

template <class D, class S>
constexpr bool assignable_field() {
  if constexpr (is_nullable_v<D>) {
    using V = typename D::value_type;
    if constexpr (maybe_empty<S>::value) {
      return assignable_value<V, std::remove_cv_t<typename maybe_empty<S>::value_type>>();
    } else if constexpr (is_pointer_source<V, S>()) {
      return assignable_value<V, std::remove_cv_t<std::remove_pointer_t<S>>>();
    } else {
      return assignable_value<V, S>();
    }
  } else if constexpr (maybe_empty<S>::value) {
    return false;  // field() and assign_field() say why
  } else {
    return assignable_value<D, S>();
  }
}

// A source that can be empty goes only into a member that can be NULL: an
// empty optional stored as '' or 0 is the confusion nullable<T> exists to
// end, and silently writing value_or(T{}) would bring it back.
template <class D, class S>
constexpr void check_emptiness() {
  static_assert(is_nullable_v<D> || !maybe_empty<S>::value,
                "auditpipe: this source (std::optional or auditpipe::nullable) may be empty, but "
                "the record member cannot be NULL. Declare the member auditpipe::nullable<T>, or "
                "map an explicit fallback with auditpipe::compute(&Record::member, [](const Src& "
                "s) { return s.member.value_or(...); }).");
}

// The copy of one present value into one record field.
template <class D, class S>
inline void assign_value(D& dst, const S& src) noexcept {
  if constexpr (is_fixed_string<D>::value) {
    // Character pointers go through assign(const char*): a null one is an
    // empty, counted field, not a strlen(nullptr).
    if constexpr (std::is_convertible_v<const S&, const char*>) {
      dst.assign(static_cast<const char*>(src));
    } else {
      dst.assign(std::string_view(src));
    }
  } else if constexpr (std::is_same_v<D, timestamp>) {
    if constexpr (std::is_same_v<S, timestamp>) {
      dst = src;
    } else {
      dst = timestamp::from(src);
    }
  } else if constexpr (std::is_enum_v<S>) {
    dst = static_cast<D>(static_cast<std::underlying_type_t<S>>(src));
  } else {
    dst = static_cast<D>(src);
  }
}

// The copy of one source value into one record field: into a nullable
// member, an empty optional or nullable, or a null pointer, is NULL.
template <class D, class S>
inline void assign_field(D& dst, const S& src) noexcept {
  check_emptiness<D, S>();
  if constexpr (is_nullable_v<D>) {
    using V = typename D::value_type;
    if constexpr (maybe_empty<S>::value) {
      if (src.has_value()) {
        assign_value(dst.emplace(), *src);
      } else {
        dst.reset();
      }
    } else if constexpr (is_pointer_source<V, S>()) {
      if (src != nullptr) {
        assign_value(dst.emplace(), *src);
      } else {
        dst.reset();
      }
    } else if constexpr (is_fixed_string<V>::value &&
                         std::is_convertible_v<const S&, const char*>) {
      if (static_cast<const char*>(src) != nullptr) {
        dst.emplace().assign(static_cast<const char*>(src));
      } else {
        dst.reset();
      }
    } else {
      assign_value(dst.emplace(), src);
    }
  } else {
    assign_value(dst, src);
  }
}

}  // namespace detail

/// Copies src.*from into record.*to.
template <class Src, class SrcMember, class Dst, class DstMember>
struct Field {
  /// The source object's member.
  SrcMember Src::*from;
  /// The record's member.
  DstMember Dst::*to;

  /// record.*to = src.*from, converted as the field's type says.
  void apply(const Src& src, Dst& dst) const noexcept { detail::assign_field(dst.*to, src.*from); }
};

/// A Field copying src.*from into record.*to; a compile error names the mismatch when the member
/// types cannot be mapped.
template <class Src, class SrcMember, class Dst, class DstMember>
constexpr Field<Src, SrcMember, Dst, DstMember> field(SrcMember Src::*from, DstMember Dst::*to) {
  detail::check_emptiness<DstMember, SrcMember>();
  static_assert(
      detail::assignable_field<DstMember, SrcMember>(),
      "auditpipe: this source member cannot be mapped onto that record field. Text "
      "fields take anything convertible to std::string_view; timestamps take "
      "auditpipe::timestamp or std::chrono::system_clock::time_point; integers take "
      "integers and enums whose every value they hold (a narrower or unsigned member: "
      "auditpipe::compute with the conversion you mean); double takes the numbers it holds "
      "exactly (not a 64-bit integer: auditpipe::compute with static_cast<double>); bool "
      "takes bool. An auditpipe::nullable<T> "
      "member takes what T takes, a std::optional or nullable of it, or a pointer to it "
      "(nullptr: NULL; for text, a null const char*).");
  return {from, to};
}

/// Sets record.*to from a function of the whole source object (a derived or
/// computed value, e.g. a status name looked up in a static table).
template <class Dst, class DstMember, class Fn>
struct ComputedField {
  /// The record's member.
  DstMember Dst::*to;
  /// Computes the value from the source object.
  Fn fn;

  /// record.*to = fn(src).
  template <class Src>
  void apply(const Src& src, Dst& dst) const noexcept {
    detail::assign_field(dst.*to, fn(src));
  }
};

/// A ComputedField setting record.*to to fn(source).
template <class Dst, class DstMember, class Fn>
constexpr ComputedField<Dst, DstMember, Fn> compute(DstMember Dst::*to, Fn fn) {
  return {to, fn};
}

namespace detail {
struct now_fn {
  template <class Src>
  timestamp operator()(const Src&) const noexcept {
    return timestamp::fast_now();
  }
};
}  // namespace detail

/// Sets record.*to to the time of the copy (timestamp::fast_now(): a cycle
/// count the writer turns into wall time before the record reaches a sink).
template <class Dst>
constexpr ComputedField<Dst, timestamp, detail::now_fn> stamp_now(timestamp Dst::*to) {
  return {to, detail::now_fn{}};
}
/// The same for a nullable timestamp member (then never NULL).
template <class Dst>
constexpr ComputedField<Dst, nullable<timestamp>, detail::now_fn> stamp_now(
    nullable<timestamp> Dst::*to) {
  return {to, detail::now_fn{}};
}

/// An ordered list of fields, applied in order.
template <class... Fields>
struct Mapping {
  /// The fields, in order.
  std::tuple<Fields...> fields;

  /// Applies every field to the record, in order.
  template <class Src, class Dst>
  void apply(const Src& src, Dst& dst) const noexcept {
    std::apply([&](const auto&... f) { (f.apply(src, dst), ...); }, fields);
  }
};

/// The Mapping of these fields, for map_fields().
template <class... Fields>
constexpr Mapping<Fields...> mapping(Fields... fields) {
  return {std::tuple<Fields...>(fields...)};
}

/// Whether map_fields(type_tag<Src>, type_tag<Record>) is declared.
template <class Src, class Record>
concept mapped = requires {
  map_fields(type_tag<Src>{}, type_tag<Record>{});
};

/// The mapping map_fields() declares for Src onto Record (what Logger::log(source) uses).
template <class Src, class Record>
inline constexpr auto mapping_of = map_fields(type_tag<Src>{}, type_tag<Record>{});

}  // namespace auditpipe
