// shown_name(): a name as an error message shows it. A name that is being
// refused may hold anything: a NUL ended the message where it was printed
// as a C string, escape sequences (ESC, C1's CSI) reached the terminal, and
// a cut inside a UTF-8 character left the message invalid. So every byte
// outside printable ASCII, and the quote and backslash, is shown as \xNN,
// and a long name is cut (after 80 bytes, with its length said).
//
// shown_catalog_name() does the same for a name a database's catalog gives
// (a table's columns and keys), which may be any text the database takes:
// it keeps the printable characters of valid UTF-8 (a column named in
// Chinese reads as itself) and shows only control and format characters
// (C0, DEL, C1, the bidirectional and zero-width ones) and bytes that are
// not UTF-8 as \xNN.
//
// Not part of the API: for auditpipe's own schema and table checks
// (Schema, the ingest tool's schema files, the SQL sinks' table check).
//
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace auditpipe::detail {

inline std::string shown_name(std::string_view name) {
  constexpr std::size_t most = 80;
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < name.size() && i < most; ++i) {
    const auto b = static_cast<unsigned char>(name[i]);
    if (b < 0x20 || b > 0x7E || b == '"' || b == '\\') {
      out += {'\\', 'x', hex[b >> 4], hex[b & 15]};
    } else {
      out += static_cast<char>(b);
    }
  }
  if (name.size() > most) out += "... (" + std::to_string(name.size()) + " bytes)";
  return out;
}

inline std::string shown_catalog_name(std::string_view name) {
  constexpr std::size_t most = 80;
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  auto escape = [&](unsigned char b) { out += {'\\', 'x', hex[b >> 4], hex[b & 15]}; };
  while (i < name.size() && i < most) {
    const auto b = static_cast<unsigned char>(name[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7F || b == '"' || b == '\\') {
        escape(b);
      } else {
        out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    // One UTF-8 sequence: its length, code point and whether it is well formed.
    const std::size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    char32_t cp = n == 4 ? b & 0x07u : n == 3 ? b & 0x0Fu : b & 0x1Fu;
    bool valid = n != 0 && b <= 0xF4 && i + n <= name.size();
    for (std::size_t k = 1; valid && k < n; ++k) {
      const auto c = static_cast<unsigned char>(name[i + k]);
      valid = (c & 0xC0u) == 0x80u;
      cp = (cp << 6) | (c & 0x3Fu);
    }
    valid = valid &&
            cp >= (n == 2   ? 0x80u
                   : n == 3 ? 0x800u
                            : 0x10000u) &&
            cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    const bool shown_as_is = valid && cp >= 0xA0 && cp != 0xAD && !(cp >= 0x200B && cp <= 0x200F) &&
                             !(cp >= 0x2028 && cp <= 0x202E) && !(cp >= 0x2060 && cp <= 0x206F) &&
                             cp != 0xFEFF;
    if (shown_as_is) {
      out.append(name.substr(i, n));
      i += n;
    } else {
      for (std::size_t k = 0; k < (valid ? n : 1); ++k)
        escape(static_cast<unsigned char>(name[i + k]));
      i += valid ? n : 1;
    }
  }
  if (i < name.size()) out += "... (" + std::to_string(name.size()) + " bytes)";
  return out;
}

}  // namespace auditpipe::detail
