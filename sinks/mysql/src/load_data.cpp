// LOAD DATA LOCAL INFILE with the "file" served from memory by a local
// infile handler: the server asks for a file, the handler hands it the
// batch as tab-separated text and nothing else (whatever name the server
// asks for, no file on disk is ever read).
#include <errmsg.h>
#include <mysqld_error.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "auditpipe/detail/text_escape.h"
#include "auditpipe/diagnostics.h"
#include "time_format.h"
#include "write_paths.h"

namespace auditpipe::mysql {

using detail::append_number;

namespace {

struct LoadState : MysqlConnection::PathState {
  std::string data;
  std::size_t position = 0;
  // The most the handler hands over per read: the connector sends each
  // read as one packet, which must fit in max_allowed_packet (its own
  // buffer can be larger). Rows may span packets, so any record fits.
  std::size_t chunk = 0;
  std::string statement;
};

int infile_init(void** ptr, const char*, void* userdata) {
  auto* s = static_cast<LoadState*>(userdata);
  s->position = 0;
  *ptr = s;
  return 0;
}

int infile_read(void* ptr, char* buf, unsigned int len) {
  auto* s = static_cast<LoadState*>(ptr);
  const std::size_t n = std::min({std::size_t{len}, s->chunk, s->data.size() - s->position});
  std::memcpy(buf, s->data.data() + s->position, n);
  s->position += n;
  return static_cast<int>(n);
}

void infile_end(void*) {}

int infile_error(void*, char* message, unsigned int len) {
  std::snprintf(message, len, "auditpipe: in-memory infile failed");
  return CR_UNKNOWN_ERROR;
}

// LOAD DATA's default escaping: backslash, tab, newline, carriage return,
// NUL and Ctrl-Z become \\ \t \n \r \0 \Z.
constexpr detail::EscapeTable load_data_escapes =
    detail::backslash_escapes.with('\0', "\\0").with('\x1a', "\\Z");

}  // namespace

void prepare_load_data(MysqlConnection& c) {
  auto s = std::make_unique<LoadState>();
  mysql_set_local_infile_handler(c.handle(), infile_init, infile_read, infile_end, infile_error,
                                 s.get());
  c.path_state = std::move(s);
}

std::optional<MysqlError> write_load_data(MysqlConnection& c, const SqlTableText& t,
                                          const Batch& batch) {
  if (auto e = check_values(batch)) return e;
  auto& s = static_cast<LoadState&>(*c.path_state);
  if (s.statement.empty()) {
    s.statement = "LOAD DATA LOCAL INFILE 'auditpipe-batch' INTO TABLE " + t.table +
                  " CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' "
                  "LINES TERMINATED BY '\\n' (" +
                  t.columns + ")";
  }
  s.chunk = c.max_packet_payload();
  s.data.clear();
  for (const RecordRef& r : batch.records) {
    for (const Column& col : batch.table.columns) {
      if (is_null(r.data, col)) {
        // LOAD DATA's NULL with ESCAPED BY '\\'; a text "\N" is escaped to
        // "\\N", so the two never meet.
        s.data += "\\N\t";
        continue;
      }
      switch (col.type) {
        case ColumnType::float64:
          append_number(s.data, read_float64(r.data, col));
          break;
        case ColumnType::timestamp: {
          char buf[32];
          s.data.append(buf, timestamp{read_integer(r.data, col)}.format(buf));
          break;
        }
        case ColumnType::text:
          detail::append_escaped(s.data, read_text(r.data, col), load_data_escapes);
          break;
        default:
          append_number(s.data, read_integer(r.data, col));
          break;
      }
      s.data += '\t';
    }
    append_number(s.data, r.source_id);
    s.data += '\t';
    append_number(s.data, r.seq);
    s.data += '\n';
  }
  // The warnings are read before the COMMIT (on Galera) clears them.
  return committed(c, [&]() -> std::optional<MysqlError> {
    if (auto e = c.execute(s.statement)) return e;
    c.rows_stored += c.last_affected_rows();
    if (mysql_warning_count(c.handle()) == 0) return std::nullopt;
    // With LOCAL the server skips duplicates (expected on a retry) but also
    // converts bad values with only a warning: anything but a duplicate is
    // surfaced, since the rows are stored (on Galera: once the COMMIT
    // succeeds; if it fails, the batch is written again and warns again).
    if (mysql_real_query(c.handle(), "SHOW WARNINGS", 13) != 0) return c.last_error();
    if (MYSQL_RES* res = mysql_store_result(c.handle())) {
      while (MYSQL_ROW row = mysql_fetch_row(res)) {
        if (row[1] != nullptr && std::strcmp(row[1], "1062") != 0) {
          diagnostics()->error("auditpipe: LOAD DATA into {} stored a converted value: {} {}",
                               t.table, row[1], c.hide_password(row[2] ? row[2] : ""));
        }
      }
      mysql_free_result(res);
    }
    return std::nullopt;
  });
}

}  // namespace auditpipe::mysql
