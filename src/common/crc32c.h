// CRC-32C (Castagnoli), the checksum of spill-file frames; Boost.CRC
// (Debian's libboost-dev, already needed by SOCI's headers) computes it.
#pragma once

#include <boost/crc.hpp>
#include <cstddef>
#include <cstdint>

namespace auditpipe::internal {

inline std::uint32_t crc32c(const void* data, std::size_t size) noexcept {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, size);
  return crc.checksum();
}

}  // namespace auditpipe::internal
