// shown_name(): a name as an error message shows it. A name that is being
// refused may hold anything: a NUL ended the message where it was printed
// as a C string, escape sequences (ESC, C1's CSI) reached the terminal, and
// a cut inside a UTF-8 character left the message invalid. So every byte
// outside printable ASCII, and the quote and backslash, is shown as \xNN,
// and a long name is cut (after 80 bytes, with its length said).
//
// Not part of the API: for auditpipe's own schema checks (Schema, the
// ingest tool's schema files).
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

}  // namespace auditpipe::detail
