#include "auditpipe/utf8.h"

#include <cstdint>
#include <cstring>

namespace auditpipe {

namespace {

// Length of the well-formed character at text[i], or 0 if the bytes there
// are ill-formed; `consumed` is the length of the maximal ill-formed prefix
// to replace (at least 1) in that case. Ranges from the Unicode standard,
// table 3-7.
std::size_t decode(const unsigned char* p, std::size_t n, std::size_t* consumed) noexcept {
  const unsigned char b0 = p[0];
  *consumed = 1;
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char lower = k == 1 ? lo : 0x80, upper = k == 1 ? hi : 0xBF;
    if (k >= n || p[k] < lower || p[k] > upper) {
      *consumed = k;
      return 0;
    }
  }
  return len;
}

// OR of every byte, tested once: a loop without early exits, which the
// compiler turns into wide vector operations (most text is ASCII).
bool all_ascii(const char* data, std::size_t size) noexcept {
  std::uint64_t bits = 0;
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, data + i, 8);
    bits |= word;
  }
  for (; i < size; ++i) bits |= static_cast<unsigned char>(data[i]);
  return (bits & 0x8080808080808080ull) == 0;
}

}  // namespace

bool is_valid_utf8(std::string_view text) noexcept {
  if (all_ascii(text.data(), text.size())) return true;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t consumed;
    const std::size_t len = decode(p + i, text.size() - i, &consumed);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::size_t repair_utf8(char* data, std::size_t size, std::size_t capacity,
                        bool* truncated) noexcept {
  if (truncated) *truncated = false;
  if (is_valid_utf8({data, size})) return size;
  // Rebuild into a scratch copy: replacements can grow the text.
  constexpr std::size_t max_field = 1u << 24;
  if (size > max_field) size = max_field;
  char stack[1024];
  char* in = size <= sizeof stack ? stack : new (std::nothrow) char[size];
  if (in == nullptr) {  // no memory for a copy: fall back to '?' in place
    for (std::size_t i = 0; i < size; ++i) {
      if (static_cast<unsigned char>(data[i]) & 0x80) data[i] = '?';
    }
    return size;
  }
  std::memcpy(in, data, size);
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  std::size_t out = 0;
  for (std::size_t i = 0; i < size;) {
    std::size_t consumed;
    const std::size_t len = decode(p + i, size - i, &consumed);
    const char* piece = len ? in + i : "\xEF\xBF\xBD";
    const std::size_t piece_len = len ? len : 3;
    if (out + piece_len > capacity) {
      if (truncated) *truncated = true;
      break;
    }
    std::memcpy(data + out, piece, piece_len);
    out += piece_len;
    i += len ? len : consumed;
  }
  if (in != stack) delete[] in;
  return out;
}

std::size_t replace_nul(char* data, std::size_t size, std::size_t capacity,
                        bool* truncated) noexcept {
  if (truncated) *truncated = false;
  std::size_t nuls = 0;
  for (std::size_t i = 0; i < size; ++i) nuls += data[i] == '\0';
  if (nuls == 0) return size;
  // Work from the end so each byte moves once.
  std::size_t out = size + 2 * nuls;
  std::size_t in = size;
  while (out > capacity) {  // drop whole characters from the end until it fits
    --in;
    out -= data[in] == '\0' ? 3 : 1;
    if (truncated) *truncated = true;
  }
  // A cut may have split a multi-byte character: back up to its start.
  while (in > 0 && in < size && (static_cast<unsigned char>(data[in]) & 0xC0u) == 0x80u) {
    --in;
    out -= data[in] == '\0' ? 3 : 1;
  }
  const std::size_t result = out;
  while (in > 0) {
    --in;
    if (data[in] == '\0') {
      out -= 3;
      std::memcpy(data + out, "\xEF\xBF\xBD", 3);
    } else {
      data[--out] = data[in];
    }
  }
  return result;
}

}  // namespace auditpipe
