// expect: may be empty, but the record member cannot be NULL
#include <cstdint>
#include <optional>

#include "auditpipe/mapping.h"

struct Row {
  std::int64_t amount = 0;
};
struct Message {
  std::optional<std::int64_t> amount;
};
constexpr auto map = auditpipe::mapping(auditpipe::field(&Message::amount, &Row::amount));
int main() {
  return 0;
}
