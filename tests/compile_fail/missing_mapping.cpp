// expect: no mapping from this type to the record
#include <cstdint>

#include "auditpipe/logger.h"

struct Row {
  std::int64_t id = 0;
};
constexpr auto describe(auditpipe::type_tag<Row>) {
  return auditpipe::table<Row>("rows", AUDITPIPE_COLUMN(Row, id));
}
struct Unmapped {
  int x = 0;
};
auditpipe::Status use(auditpipe::Logger<Row>& logger) {
  return logger.log(Unmapped{});
}
int main() {
  return 0;
}
