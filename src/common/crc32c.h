// CRC-32C (Castagnoli): the checksum of spill-file frames and of a sealed
// row's fingerprint (sinks/sql's seal.cpp; header-only, so any library of
// the project may include it). Boost.CRC (Debian's libboost-dev, already
// needed by SOCI's headers) computes it, unless the CPU has SSE 4.2, whose
// crc32 instruction does 8 bytes at a time, in three lanes at once (below):
// Boost's table took 800 ns for a 250-byte row. Both give the same value.
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
namespace crc32c_lanes {

// The crc32 instruction takes 3 cycles and can start one per cycle, so one
// chain of them does 8 bytes per 3 cycles. Three lanes of `lane` bytes are
// summed side by side instead, and joined: the register is linear in the
// data, so the sum over A|B|C is A's register advanced over 2 lanes of zero
// bytes, xor B's (from 0) advanced over one, xor C's. A sealed row's
// fingerprint (about 240 bytes) took 21 ns one chain at a time (perf of
// bench/sink_ceiling, sealed).
inline constexpr std::size_t lane = 64;

// The register advanced over `zero_bytes` zero bytes, per byte of it: a
// 32x32 matrix over GF(2) as 4 tables of 256, built from its columns.
struct Advance {
  std::uint32_t by_byte[4][256];
};

inline std::uint32_t advance_bitwise(std::uint32_t c, std::size_t zero_bytes) noexcept {
  for (std::size_t i = 0; i < 8 * zero_bytes; ++i) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  return c;
}

inline std::uint32_t advance(const Advance& a, std::uint32_t c) noexcept {
  return a.by_byte[0][c & 0xff] ^ a.by_byte[1][(c >> 8) & 0xff] ^ a.by_byte[2][(c >> 16) & 0xff] ^
         a.by_byte[3][c >> 24];
}

// Over `lane` zero bytes bit by bit, or (given `half`) over twice what
// `half` advances: the columns of 2 lanes are those of one, advanced again.
inline Advance make_advance(const Advance* half) noexcept {
  std::uint32_t column[32];
  for (int bit = 0; bit < 32; ++bit) {
    column[bit] = half != nullptr ? advance(*half, advance(*half, 1u << bit))
                                  : advance_bitwise(1u << bit, lane);
  }
  Advance a{};
  for (int k = 0; k < 4; ++k) {
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t v = 0;
      for (int bit = 0; bit < 8; ++bit) {
        if ((b >> bit) & 1u) v ^= column[8 * k + bit];
      }
      a.by_byte[k][b] = v;
    }
  }
  return a;
}

// Built as the program loads (see crc32c_sse42_supported below), 8 KiB.
inline const Advance one_lane = make_advance(nullptr);
inline const Advance two_lanes = make_advance(&one_lane);

}  // namespace crc32c_lanes

__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(const void* data,
                                                                    std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = 0xFFFFFFFFu;
  const auto word = [](const unsigned char* at) {
    std::uint64_t w;
    std::memcpy(&w, at, 8);
    return w;
  };
  using crc32c_lanes::lane;
  for (; n >= 3 * lane; p += 3 * lane, n -= 3 * lane) {
    std::uint64_t a = c, b = 0, d = 0;
    for (std::size_t i = 0; i < lane; i += 8) {
      a = __builtin_ia32_crc32di(a, word(p + i));
      b = __builtin_ia32_crc32di(b, word(p + lane + i));
      d = __builtin_ia32_crc32di(d, word(p + 2 * lane + i));
    }
    c = crc32c_lanes::advance(crc32c_lanes::two_lanes, static_cast<std::uint32_t>(a)) ^
        crc32c_lanes::advance(crc32c_lanes::one_lane, static_cast<std::uint32_t>(b)) ^
        static_cast<std::uint32_t>(d);
  }
  for (; n >= 8; p += 8, n -= 8) c = __builtin_ia32_crc32di(c, word(p));
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
