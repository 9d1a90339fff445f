// Column-wise array binding: per column an array of values (integers,
// doubles), of MYSQL_TIME pointers (timestamps) or of char pointers plus
// lengths (text, pointing into the records themselves: no copy).
#include <mysql.h>

#include <vector>

#include "auditpipe/status.h"
#include "time_format.h"
#include "write_paths.h"

namespace auditpipe::mysql {

namespace {

struct ColumnArrays {
  std::vector<long long> integers;
  std::vector<double> reals;
  std::vector<const char*> texts;
  std::vector<unsigned long> lengths;
  std::vector<MYSQL_TIME> times;
  std::vector<MYSQL_TIME*> time_pointers;
};

struct BulkState : MysqlConnection::PathState {
  MYSQL_STMT* stmt = nullptr;
  std::vector<MYSQL_BIND> binds;
  std::vector<ColumnArrays> arrays;  // record columns, then source_id, seq
  ~BulkState() override {
    if (stmt != nullptr) mysql_stmt_close(stmt);
  }
};

MysqlError statement_error(const MysqlConnection& c, MYSQL_STMT* stmt) {
  return MysqlError{mysql_stmt_errno(stmt), mysql_stmt_sqlstate(stmt),
                    c.hide_password(mysql_stmt_error(stmt))};
}

// The COM_STMT_BULK_EXECUTE packet, as MariaDB Connector/C builds it
// (checked against the server at max_allowed_packet 1024: a byte more is
// refused): a command byte, the statement id (4), flags (2) and two type
// bytes per parameter (sent with every execute, since the binds are set
// anew each time); then per row and parameter an indicator byte and the
// value in the binary protocol.
std::size_t statement_bytes(std::size_t parameters) {
  return 1 + 4 + 2 + 2 * parameters;
}

// A string's length prefix in the binary protocol (length-encoded integer).
std::size_t length_prefix(std::size_t n) {
  return n < 251 ? 1 : n < (1u << 16) ? 3 : n < (1u << 24) ? 4 : 9;
}

// A DATETIME is a length byte and 4 (date), 7 (and time) or 11 (and
// microseconds) bytes: the connector leaves out trailing zero parts.
std::size_t datetime_bytes(std::int64_t micros) {
  constexpr std::int64_t second = 1'000'000, day = 86'400 * second;
  if ((micros % second + second) % second != 0) return 12;
  if ((micros % day + day) % day != 0) return 8;
  return 5;
}

// Exactly the bytes one row adds to the packet.
std::size_t row_bytes(const Batch& batch, const RecordRef& r) {
  std::size_t n = 2 * (1 + 8);  // source_id, seq
  for (const Column& c : batch.table.columns) {
    if (c.type == ColumnType::text) {
      const std::size_t size = read_text(r.data, c).size();
      n += 1 + length_prefix(size) + size;
    } else if (c.type == ColumnType::timestamp) {
      n += 1 + datetime_bytes(read_integer(r.data, c));
    } else {
      n += 1 + 8;  // every integer as LONGLONG, doubles as DOUBLE
    }
  }
  return n;
}

std::optional<MysqlError> execute_rows(const MysqlConnection& connection, BulkState& s,
                                       const Batch& batch, std::size_t begin, std::size_t end) {
  const std::size_t n = end - begin;
  const auto& columns = batch.table.columns;
  const std::size_t k = columns.size();
  for (std::size_t col = 0; col < k + 2; ++col) {
    ColumnArrays& a = s.arrays[col];
    MYSQL_BIND& b = s.binds[col];
    const Column* c = col < k ? &columns[col] : nullptr;
    if (c == nullptr || is_integer(c->type)) {
      a.integers.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const RecordRef& r = batch.records[begin + i];
        a.integers[i] = c ? read_integer(r.data, *c) : (col == k ? r.source_id : r.seq);
      }
      b.buffer = a.integers.data();
    } else if (c->type == ColumnType::float64) {
      a.reals.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        a.reals[i] = read_float64(batch.records[begin + i].data, *c);
      b.buffer = a.reals.data();
    } else if (c->type == ColumnType::timestamp) {
      a.times.resize(n);
      a.time_pointers.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        a.times[i] = to_mysql_time(civil_time_of(read_integer(batch.records[begin + i].data, *c)));
        a.time_pointers[i] = &a.times[i];
      }
      b.buffer = a.time_pointers.data();
    } else {
      a.texts.resize(n);
      a.lengths.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::string_view t = read_text(batch.records[begin + i].data, *c);
        a.texts[i] = t.data();
        a.lengths[i] = t.size();
      }
      b.buffer = a.texts.data();
      b.length = a.lengths.data();
    }
  }
  unsigned int size = static_cast<unsigned int>(n);
  if (mysql_stmt_attr_set(s.stmt, STMT_ATTR_ARRAY_SIZE, &size) != 0 ||
      mysql_stmt_bind_param(s.stmt, s.binds.data()) != 0 || mysql_stmt_execute(s.stmt) != 0) {
    return statement_error(connection, s.stmt);
  }
  return std::nullopt;
}

}  // namespace

void prepare_bulk(MysqlConnection& c, const SqlTableText& sql, const TableDescriptor& table) {
  auto s = std::make_unique<BulkState>();
  s->stmt = mysql_stmt_init(c.handle());
  if (s->stmt == nullptr)
    throw error(c.hide_password("auditpipe: cannot create a MySQL statement: " +
                                c.last_error().describe()));
  const std::string text = sql.single_row_insert();
  if (mysql_stmt_prepare(s->stmt, text.data(), text.size()) != 0) {
    throw error(c.hide_password("auditpipe: cannot prepare the insert on " +
                                c.endpoint().describe() + ": " +
                                statement_error(c, s->stmt).describe()));
  }
  s->binds.assign(sql.column_count, MYSQL_BIND{});
  s->arrays.resize(sql.column_count);
  for (std::size_t col = 0; col < sql.column_count; ++col) {
    MYSQL_BIND& b = s->binds[col];
    const Column* column = col < table.columns.size() ? &table.columns[col] : nullptr;
    if (column == nullptr || is_integer(column->type)) {
      b.buffer_type = MYSQL_TYPE_LONGLONG;
    } else if (column->type == ColumnType::float64) {
      b.buffer_type = MYSQL_TYPE_DOUBLE;
    } else if (column->type == ColumnType::timestamp) {
      b.buffer_type = MYSQL_TYPE_DATETIME;
    } else {
      b.buffer_type = MYSQL_TYPE_STRING;
    }
  }
  c.path_state = std::move(s);
}

std::optional<MysqlError> write_bulk(MysqlConnection& c, const SqlTableText&, const Batch& batch) {
  if (auto e = check_values(batch)) return e;
  auto& s = static_cast<BulkState&>(*c.path_state);
  // The whole array goes out as one packet, which the server drops the
  // connection for if it exceeds max_allowed_packet: cut by bytes, to the
  // byte. A row that does not fit even alone is refused as data.
  const std::size_t header = statement_bytes(batch.table.columns.size() + 2);
  const std::size_t payload = c.max_packet_payload();
  const std::size_t limit = payload > header ? payload - header : 0;
  std::size_t begin = 0, bytes = 0;
  for (std::size_t i = 0; i < batch.records.size(); ++i) {
    const std::size_t row = row_bytes(batch, batch.records[i]);
    if (row > limit) {
      return record_too_large(batch.records[i], header + row, c.max_allowed_packet());
    }
    if (i > begin && bytes + row > limit) {
      if (auto e = execute_rows(c, s, batch, begin, i)) return e;
      begin = i;
      bytes = 0;
    }
    bytes += row;
  }
  return execute_rows(c, s, batch, begin, batch.records.size());
}

}  // namespace auditpipe::mysql
