// CRC-32C (Castagnoli): the checksum of spill-file frames and of a sealed
// row's fingerprint (sinks/sql's seal.cpp; header-only, so any library of
// the project may include it). Boost.CRC (Debian's libboost-dev, already
// needed by SOCI's headers) computes it, unless the CPU has SSE 4.2, whose
// crc32 instruction does 8 bytes at a time: about 40 ns for a 250-byte
// row, where Boost's table takes 800. Both give the same value.
#pragma once

#include <boost/crc.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace auditpipe::internal {

inline std::uint32_t crc32c_portable(const void* data, std::size_t size) noexcept {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, size);
  return crc.checksum();
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(const void* data,
                                                                    std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, *p);
  return ~c32;
}
#endif

#if defined(__x86_64__)
// Asked as the program loads, not at the first use: a child forked while
// another thread was in a function-local static's initialization waits for
// ever for it. Read before it is set (another static initializer), it is
// false, and the portable loop gives the same sums.
inline const bool crc32c_sse42_supported = [] {
  __builtin_cpu_init();  // may run before the CPU model's own constructor
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#endif

inline std::uint32_t crc32c(const void* data, std::size_t size) noexcept {
#if defined(__x86_64__)
  if (crc32c_sse42_supported) return crc32c_sse42(data, size);
#endif
  return crc32c_portable(data, size);
}

}  // namespace auditpipe::internal
