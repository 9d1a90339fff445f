// A 64-bit fingerprint of a record layout: files that hold raw records
// (spill segments, the durable pool) carry it, so records are never read
// back under a different layout.
#pragma once

#include <cstdint>
#include <string_view>

#include "auditpipe/column.h"

namespace auditpipe::internal {

// FNV-1a over everything that decides where a column's bytes are.
inline std::uint64_t fingerprint(const TableDescriptor& t) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto mix_text = [&](std::string_view s) {
    mix(s.data(), s.size());
    mix("\0", 1);
  };
  mix_text(t.name);
  mix(&t.record_size, sizeof t.record_size);
  for (const Column& c : t.columns) {
    mix_text(c.name);
    mix(&c.type, sizeof c.type);
    mix(&c.offset, sizeof c.offset);
    mix(&c.size, sizeof c.size);
    mix(&c.max_length, sizeof c.max_length);
    mix(&c.nullable, sizeof c.nullable);
    mix(&c.presence_offset, sizeof c.presence_offset);
    // Only where set: the layouts made before it existed keep their print.
    if (c.max_chars != 0) mix(&c.max_chars, sizeof c.max_chars);
  }
  return h;
}

}  // namespace auditpipe::internal
