// expect: auditpipe_error_source_id_and_seq_are_reserved_column_names
#include <cstdint>

#include "auditpipe/table.h"

struct Row {
  std::int64_t seq = 0;
};
constexpr auto describe(auditpipe::type_tag<Row>) {
  return auditpipe::table<Row>("rows", AUDITPIPE_COLUMN(Row, seq));
}
int main() {
  return static_cast<int>(auditpipe::descriptor_of<Row>().columns.size());
}
