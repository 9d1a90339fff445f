// Multi-row INSERT as text: one reused buffer, values escaped by the
// server's own function, statements cut to fit max_allowed_packet.
#include <string>

#include "auditpipe/detail/text_escape.h"
#include "time_format.h"
#include "write_paths.h"

namespace auditpipe::mysql {

using detail::append_number;

namespace {

struct TextState : MysqlConnection::PathState {
  std::string sql;
};

void append_row(MysqlConnection& c, std::string& out, const Batch& batch, const RecordRef& r) {
  out += '(';
  for (const Column& col : batch.table.columns) {
    if (is_null(r.data, col)) {
      out += "NULL,";
      continue;
    }
    switch (col.type) {
      case ColumnType::float64:
        append_number(out, read_float64(r.data, col));  // shortest exact form
        break;
      case ColumnType::timestamp: {
        char buf[32];
        char* end = timestamp{read_integer(r.data, col)}.format(buf);
        out += '\'';
        out.append(buf, end);
        out += '\'';
        break;
      }
      case ColumnType::text: {
        const std::string_view t = read_text(r.data, col);
        const std::size_t at = out.size();
        out.resize(at + 2 * t.size() + 3);
        out[at] = '\'';
        const unsigned long n =
            mysql_real_escape_string(c.handle(), &out[at + 1], t.data(), t.size());
        out[at + 1 + n] = '\'';
        out.resize(at + n + 2);
        break;
      }
      default:
        append_number(out, read_integer(r.data, col));
        break;
    }
    out += ',';
  }
  append_number(out, r.source_id);
  out += ',';
  append_number(out, r.seq);
  out += ')';
}

std::optional<MysqlError> run(MysqlConnection& c, std::string& sql, const SqlTableText& t) {
  sql += t.insert_tail;
  auto e = committed(c, [&] {
    auto failed = c.execute(sql);
    if (!failed) c.rows_stored += c.last_affected_rows();
    return failed;
  });
  sql.assign(t.insert_head);
  return e;
}

}  // namespace

std::optional<MysqlError> write_text(MysqlConnection& c, const SqlTableText& t,
                                     const Batch& batch) {
  if (auto e = check_values(batch)) return e;
  if (!c.path_state) c.path_state = std::make_unique<TextState>();
  std::string& sql = static_cast<TextState&>(*c.path_state).sql;
  // A COM_QUERY packet is a command byte and the statement text.
  const std::size_t payload = c.max_packet_payload();
  const std::size_t limit = payload > 1 ? payload - 1 : 0;
  sql.assign(t.insert_head);
  std::size_t rows = 0;
  for (const RecordRef& r : batch.records) {
    const std::size_t before = sql.size();
    if (rows != 0) sql += ',';
    append_row(c, sql, batch, r);
    if (sql.size() + t.insert_tail.size() > limit) {
      if (rows == 0) {
        return record_too_large(r, 1 + sql.size() + t.insert_tail.size(), c.max_allowed_packet());
      }
      // Send what fits, then start the next statement with this row.
      std::string this_row = sql.substr(before + 1);
      sql.resize(before);
      if (auto e = run(c, sql, t)) return e;
      sql += this_row;
      if (sql.size() + t.insert_tail.size() > limit) {
        return record_too_large(r, 1 + sql.size() + t.insert_tail.size(), c.max_allowed_packet());
      }
      rows = 0;
    }
    ++rows;
  }
  return run(c, sql, t);
}

}  // namespace auditpipe::mysql
