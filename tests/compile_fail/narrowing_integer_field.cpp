// expect: integers and enums whose every value they hold
// An int mapped onto a std::uint8_t member wrapped (300 stored as 44, -1
// as 255), with no error and no counter: refused at compile time, as a
// double onto an integer is.
#include <cstdint>

#include "auditpipe/mapping.h"

struct Row {
  std::uint8_t attempts = 0;
};
struct Message {
  int attempts = 0;
};
constexpr auto map = auditpipe::mapping(auditpipe::field(&Message::attempts, &Row::attempts));
int main() {
  return 0;
}
