// Values written as text into a buffer: numbers in their shortest exact
// form, and text escaped byte by byte through a table that says what each
// byte becomes. One helper for every text target auditpipe writes: the
// dead-letter file's JSON (the core), COPY and LOAD DATA data (the SQL
// sinks), logfmt lines (the spdlog bridge). Each target's table is built
// from the pieces here in one line where it is used.
//
// Not part of the API: for auditpipe's own sinks, bridges and core files.
//
// Thread safety: pure functions and constant tables.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace auditpipe::detail {

// Appends `value` (an integer or a double) in the shortest form that reads
// back exactly (std::to_chars): no locale, no allocation beyond the
// buffer's own growth.
template <class Number>
void append_number(std::string& out, Number value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

// For each byte, the text written in its place; an empty entry writes the
// byte itself. Built at compile time by chaining with().
class EscapeTable {
 public:
  constexpr EscapeTable() = default;

  // This table, with `byte` written as `replacement` (which must outlive
  // the table: a literal).
  constexpr EscapeTable with(char byte, std::string_view replacement) const {
    EscapeTable t = *this;
    t.replacement_[static_cast<unsigned char>(byte)] = replacement;
    return t;
  }
  // This table, with every entry `other` has taking precedence.
  constexpr EscapeTable with(const EscapeTable& other) const {
    EscapeTable t = *this;
    for (std::size_t i = 0; i < t.replacement_.size(); ++i) {
      if (!other.replacement_[i].empty()) t.replacement_[i] = other.replacement_[i];
    }
    return t;
  }
  // This table, with every control byte below 0x20 written as \u00xx.
  constexpr EscapeTable with_unicode_controls() const;

  constexpr std::string_view operator[](char byte) const {
    return replacement_[static_cast<unsigned char>(byte)];
  }

 private:
  std::array<std::string_view, 256> replacement_{};
};

// "\u0000\u0001...\u001f": the text with_unicode_controls() points into.
inline constexpr auto unicode_control_escapes = [] {
  constexpr char hex[] = "0123456789abcdef";
  std::array<char, 32 * 6> text{};
  for (std::size_t c = 0; c < 32; ++c) {
    char* e = &text[c * 6];
    e[0] = '\\';
    e[1] = 'u';
    e[2] = '0';
    e[3] = '0';
    e[4] = hex[c >> 4];
    e[5] = hex[c & 15];
  }
  return text;
}();

constexpr EscapeTable EscapeTable::with_unicode_controls() const {
  EscapeTable t = *this;
  for (std::size_t c = 0; c < 32; ++c) {
    t.replacement_[c] = std::string_view(unicode_control_escapes.data() + c * 6, 6);
  }
  return t;
}

// Appends `text` with each byte replaced as `table` says. Runs of bytes
// that stay as they are go out in one append.
inline void append_escaped(std::string& out, std::string_view text, const EscapeTable& table) {
  const char* run = text.data();
  const char* const end = text.data() + text.size();
  for (const char* p = run; p != end; ++p) {
    const std::string_view replacement = table[*p];
    if (replacement.empty()) continue;
    out.append(run, p);
    out.append(replacement);
    run = p + 1;
  }
  out.append(run, end);
}

// The escapes every table here starts from: backslash, tab, newline and
// carriage return as \\ \t \n \r. Exactly what PostgreSQL's COPY text
// format needs.
inline constexpr EscapeTable backslash_escapes =
    EscapeTable{}.with('\\', "\\\\").with('\t', "\\t").with('\n', "\\n").with('\r', "\\r");

// A JSON string's contents: the backslash escapes, \" and \u00xx for the
// other control bytes. Text is UTF-8 already (the writer repairs it), so
// nothing above 0x7f is escaped.
inline constexpr EscapeTable json_escapes =
    EscapeTable{}.with_unicode_controls().with(backslash_escapes).with('"', "\\\"");

// `text` as a JSON string, quotes included.
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  append_escaped(out, text, json_escapes);
  out += '"';
}

}  // namespace auditpipe::detail
