// expect: double takes the numbers it holds exactly
// A 64-bit integer mapped onto a double member was rounded past 2^53
// (9007199254740993 stored as 9007199254740992), with no error and no
// counter: refused at compile time. A 32-bit one still maps.
#include <cstdint>

#include "auditpipe/mapping.h"

struct Row {
  double amount = 0;
  double count = 0;
};
struct Message {
  std::int64_t amount = 0;
  std::int32_t count = 0;
};
constexpr auto map = auditpipe::mapping(auditpipe::field(&Message::count, &Row::count),
                                        auditpipe::field(&Message::amount, &Row::amount));
int main() {
  return 0;
}
