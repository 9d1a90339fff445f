// CRC-32C (src/common/crc32c.h): the SSE 4.2 sum, three lanes at a time,
// against Boost's table and the check value every length and alignment
// around the lanes' block size; a wrong join would change the spill files'
// frame sums and every sealed row's fingerprint.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "common/crc32c.h"

namespace {

using auditpipe::internal::crc32c;
using auditpipe::internal::crc32c_portable;

TEST(Crc32c, GivesTheCheckValueOfTheCastagnoliPolynomial) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, EqualsTheTableSumAtEveryLengthAndAlignment) {
  std::mt19937_64 random(12345);
  std::string bytes(2048 + 8, '\0');
  for (char& b : bytes) b = static_cast<char>(random());
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t n = 0; n <= 2048; ++n) {
      const char* p = bytes.data() + offset;
      ASSERT_EQ(crc32c(p, n), crc32c_portable(p, n)) << "length " << n << ", offset " << offset;
    }
  }
}

#if defined(__x86_64__)
TEST(Crc32c, TheThreeLaneSumIsTheOneInUseOnThisCpu) {
  // Else the test above compared the table with itself.
  if (!auditpipe::internal::crc32c_sse42_supported) GTEST_SKIP() << "no SSE 4.2 here";
  const std::string zeros(3 * auditpipe::internal::crc32c_lanes::lane, '\0');
  const std::string ones(zeros.size(), '\xff');
  for (const std::string* s : {&zeros, &ones}) {
    EXPECT_EQ(auditpipe::internal::crc32c_sse42(s->data(), s->size()),
              crc32c_portable(s->data(), s->size()));
  }
}
#endif

}  // namespace
