// UTF-8 checking and repair for text columns.
//
// Text columns are UTF-8 in every database auditpipe writes to, and a
// strict server refuses a row with malformed text. Rather than lose the
// whole record to one bad byte, the writer repairs text before it reaches
// a sink: each maximal ill-formed subsequence becomes U+FFFD (the Unicode
// replacement practice), the result is cut at a character boundary if it
// no longer fits, and the field is counted. Well-formed text, NUL bytes
// included, passes through unchanged.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "auditpipe/export.h"

namespace auditpipe {

/// True if `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing
/// above U+10FFFF).
AUDITPIPE_EXPORT bool is_valid_utf8(std::string_view text) noexcept;

/// Replaces each ill-formed subsequence of data[0, size) with U+FFFD, in
/// place, within `capacity` bytes (cutting at a character boundary when the
/// replacements do not fit). Returns the new size. `truncated`, if given, is
/// set when text had to be cut.
AUDITPIPE_EXPORT std::size_t repair_utf8(char* data, std::size_t size, std::size_t capacity,
                                         bool* truncated = nullptr) noexcept;

/// Replaces each NUL byte of data[0, size) with U+FFFD, in place, within
/// `capacity` bytes (cut at a character boundary if it no longer fits).
/// Returns the new size; `truncated` as for repair_utf8.
AUDITPIPE_EXPORT std::size_t replace_nul(char* data, std::size_t size, std::size_t capacity,
                                         bool* truncated = nullptr) noexcept;

}  // namespace auditpipe
