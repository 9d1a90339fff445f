// expect: auditpipe_error_column_names_must_be_unique
#include <cstdint>

#include "auditpipe/table.h"

struct Row {
  std::int64_t a = 0;
  std::int64_t b = 0;
};
constexpr auto describe(auditpipe::type_tag<Row>) {
  return auditpipe::table<Row>("rows", AUDITPIPE_COLUMN(Row, a), AUDITPIPE_COLUMN_AS(Row, b, "A"));
}
int main() {
  return static_cast<int>(auditpipe::descriptor_of<Row>().columns.size());
}
