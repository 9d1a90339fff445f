// fixed_string<N>: text stored inline in a record, at most N bytes.
//
// Records live in a flat, preallocated slab and are copied as bytes, so their
// text fields cannot own heap memory. A fixed_string keeps its bytes inline
// and is trivially copyable. Assigning longer text truncates it at a UTF-8
// character boundary and sets a flag in the string itself; the writer thread
// counts those flags off the hot path, so truncation is never silent and
// costs the producer nothing beyond the copy.
//
// Layout (relied on by sinks, which read columns by offset without knowing
// N): a 32-bit byte count, a 32-bit flag word, then the N bytes.
//
// Thread safety: a plain value; no internal synchronization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace auditpipe {

/// Flags kept in a fixed_string's flag word.
namespace text_flags {
/// The last assignment was cut to fit.
inline constexpr std::uint32_t truncated = 1u << 0;
inline constexpr std::uint32_t invalid_utf8 = 1u << 1;  ///< repaired by the writer
/// Assigned from a null `const char*`: stored empty, counted by the writer
/// (Stats::null_text_fields).
inline constexpr std::uint32_t from_null = 1u << 2;
/// Set by the writer once it has counted a cut (Stats::truncated_fields), so
/// that a record finished again (replayed from a spill segment, recovered
/// from a durable pool) is not counted twice.
inline constexpr std::uint32_t cut_counted = 1u << 3;
}  // namespace text_flags

/// Byte offsets inside every fixed_string<N>, for readers that only have the
/// column descriptor.
namespace text_layout {
/// The byte count (std::uint32_t).
inline constexpr std::size_t size_offset = 0;
/// The flag word (text_flags, std::uint32_t).
inline constexpr std::size_t flags_offset = 4;
/// The text's first byte.
inline constexpr std::size_t data_offset = 8;
}  // namespace text_layout

/// The largest prefix of `text` no longer than `limit` bytes that does not end
/// inside a UTF-8 character. Looks back at most three bytes: input that is not
/// valid UTF-8 there is cut at `limit` as it stands.
constexpr std::size_t utf8_prefix_length(std::string_view text, std::size_t limit) noexcept {
  if (text.size() <= limit) return text.size();
  std::size_t cut = limit;
  // text[cut] is the first byte left out; if it continues a character, that
  // character started inside the prefix and must be left out whole.
  for (int back = 0; back < 4; ++back) {
    if ((static_cast<unsigned char>(text[cut]) & 0xC0u) != 0x80u) return cut;
    if (cut == 0) break;
    --cut;
  }
  return limit;  // not valid UTF-8 around the limit: cut where it falls
}

/// The bytes of `text`'s first `max_chars` characters: a character starts at
/// each byte that is not a continuation byte (10xxxxxx), so ill-formed input
/// is cut where such a byte falls.
constexpr std::size_t utf8_prefix_chars(std::string_view text, std::size_t max_chars) noexcept {
  if (text.size() <= max_chars) return text.size();  // fewer bytes than that: fewer characters
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0u) != 0x80u && chars++ == max_chars) return i;
  }
  return text.size();
}

namespace detail {
/// Copies n bytes (n not known at compile time, but small): 16-byte blocks,
/// the last one overlapping, so every length is a few vector moves. A plain
/// memcpy of a length the compiler knows is at most N is expanded inline
/// into `rep movs`, whose start-up cost is most of a short copy's
/// (bench/hot_path: the payload's copy was the largest single cost of
/// log()).
inline void copy_text(char* dst, const char* src, std::size_t n) noexcept {
  if (n >= 16) {
    for (std::size_t i = 0; i + 16 < n; i += 16) std::memcpy(dst + i, src + i, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}
}  // namespace detail

/// Text stored inline in a record: at most N bytes of UTF-8, cut at a character boundary, with its
/// length and flags; trivially copyable.
template <std::size_t N>
class fixed_string {
  static_assert(N > 0, "auditpipe::fixed_string<N> needs N > 0");
  static_assert(N <= (1u << 24), "auditpipe::fixed_string<N> is limited to 16 MiB");

 public:
  /// N: the most bytes it holds.
  static constexpr std::size_t max_size = N;

  constexpr fixed_string() noexcept = default;
  /// Implicit on purpose: a record field is filled as `record.sender = name;`.
  constexpr fixed_string(std::string_view text) noexcept { assign(text); }  // NOLINT
  /// A C string, implicit too: `Row{1, "x"}` needs it (a literal would
  /// otherwise take two conversions). Null: empty, and counted.
  constexpr fixed_string(const char* text) noexcept { assign(text); }  // NOLINT

  /// Copies `text`, truncated at a UTF-8 boundary to N bytes. Returns true if
  /// it had to truncate (the string remembers it as well).
  constexpr bool assign(std::string_view text) noexcept {
    const std::size_t n = utf8_prefix_length(text, N);
    if (std::is_constant_evaluated()) {
      for (std::size_t i = 0; i < n; ++i) data_[i] = text[i];
    } else {
      detail::copy_text(data_, text.data(), n);
    }
    size_ = static_cast<std::uint32_t>(n);
    flags_ = n < text.size() ? text_flags::truncated : 0u;
    return n < text.size();
  }
  /// assign(text), for `record.field = text;`.
  constexpr fixed_string& operator=(std::string_view text) noexcept {
    assign(text);
    return *this;
  }
  /// A C string; a null pointer (which std::string_view cannot take) makes
  /// the field empty and marks it, so that it is counted, not a crash.
  constexpr bool assign(const char* text) noexcept {
    if (text == nullptr) {
      size_ = 0;
      flags_ = text_flags::from_null;
      return false;
    }
    return assign(std::string_view(text));
  }
  /// assign(text) for a C string (null: empty, and counted).
  constexpr fixed_string& operator=(const char* text) noexcept {
    assign(text);
    return *this;
  }

  /// Empties it and clears its flags.
  constexpr void clear() noexcept {
    size_ = 0;
    flags_ = 0;
  }

  /// The text held.
  constexpr std::string_view view() const noexcept { return {data_, size_}; }
  /// Implicit, as for std::string: the text held.
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT
  /// The text's bytes (not NUL-terminated).
  constexpr const char* data() const noexcept { return data_; }
  /// Bytes held.
  constexpr std::size_t size() const noexcept { return size_; }
  /// True if it holds no text.
  constexpr bool empty() const noexcept { return size_ == 0; }
  /// N.
  static constexpr std::size_t capacity() noexcept { return N; }
  /// True if the last assignment did not fit and was cut.
  constexpr bool truncated() const noexcept { return (flags_ & text_flags::truncated) != 0; }

  /// Compares the text held.
  friend constexpr bool operator==(const fixed_string& a, std::string_view b) noexcept {
    return a.view() == b;
  }
  /// Compares with a C string (a null one is empty). Without it `a == "x"`
  /// is ambiguous: both constructors make a candidate of the literal.
  friend constexpr bool operator==(const fixed_string& a, const char* b) noexcept {
    return a.view() == (b != nullptr ? std::string_view(b) : std::string_view());
  }
  /// Compares the texts held. Without it, C++20's reversed candidates make
  /// `a == b` of two fixed_strings ambiguous (clang: -Wambiguous-reversed-operator).
  friend constexpr bool operator==(const fixed_string& a, const fixed_string& b) noexcept {
    return a.view() == b.view();
  }

 private:
  template <std::size_t>
  friend struct fixed_string_layout_check;

  std::uint32_t size_ = 0;
  std::uint32_t flags_ = 0;
  char data_[N] = {};
};

/// Compile-time proof that the layout matches text_layout.
template <std::size_t N>
struct fixed_string_layout_check {
  static_assert(offsetof(fixed_string<N>, size_) == text_layout::size_offset);
  static_assert(offsetof(fixed_string<N>, flags_) == text_layout::flags_offset);
  static_assert(offsetof(fixed_string<N>, data_) == text_layout::data_offset);
  /// True once the static_asserts above have passed.
  static constexpr bool ok = true;
};
static_assert(fixed_string_layout_check<1>::ok && fixed_string_layout_check<255>::ok);

}  // namespace auditpipe
