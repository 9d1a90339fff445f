// expect: this member type cannot be a column
#include <string>

#include "auditpipe/table.h"

struct Row {
  std::string name;  // owns heap memory: not storable in a record
};
constexpr auto describe(auditpipe::type_tag<Row>) {
  return auditpipe::table<Row>("rows", AUDITPIPE_COLUMN(Row, name));
}
int main() {
  return static_cast<int>(auditpipe::descriptor_of<Row>().columns.size());
}
