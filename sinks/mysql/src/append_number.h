// Numbers as text, appended to a statement or data buffer: the shortest
// form that reads back exactly (std::to_chars), no locale, no allocation
// beyond the buffer's own growth.
#pragma once

#include <charconv>
#include <string>

namespace auditpipe::mysql {

template <class Number>
void append_number(std::string& out, Number value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

}  // namespace auditpipe::mysql
