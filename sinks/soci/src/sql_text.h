// SQL text helpers shared by the SOCI sinks (SQLite and PostgreSQL both
// quote identifiers the ANSI way).
#pragma once

#include <string>
#include <string_view>

namespace auditpipe::soci_sink {

// "name", with any '"' doubled. Descriptor names are plain identifiers
// already (checked at compile time); quoting keeps keywords usable as names.
inline std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace auditpipe::soci_sink
