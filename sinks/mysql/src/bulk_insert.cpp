// Column-wise array binding: per column an array of values (integers,
// doubles), of MYSQL_TIME pointers (timestamps) or of char pointers plus
// lengths (text, pointing into the records themselves: no copy).
#include <mysql.h>

#include <cmath>
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
  // A nullable column's per-row STMT_INDICATOR_NULL or _NONE (the
  // connector's u.indicator array); empty for the others.
  std::vector<char> indicators;
};

struct BulkState : MysqlConnection::PathState {
  MYSQL_STMT* stmt = nullptr;
  std::vector<MYSQL_BIND> binds;
  std::vector<ColumnArrays> arrays;  // record columns, then source_id, seq
  std::vector<std::size_t> cuts;     // where each packet of a batch ends
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

// Sends rows [begin, end) of the column arrays as one COM_STMT_BULK_EXECUTE.
std::optional<MysqlError> execute_rows(MysqlConnection& connection, BulkState& s,
                                       const Batch& batch, std::size_t begin, std::size_t end) {
  const auto& columns = batch.table.columns;
  const std::size_t k = columns.size();
  for (std::size_t col = 0; col < k + 2; ++col) {
    ColumnArrays& a = s.arrays[col];
    MYSQL_BIND& b = s.binds[col];
    const Column* c = col < k ? &columns[col] : nullptr;
    if (c == nullptr || is_integer(c->type)) {
      b.buffer = a.integers.data() + begin;
    } else if (c->type == ColumnType::float64) {
      b.buffer = a.reals.data() + begin;
    } else if (c->type == ColumnType::timestamp) {
      b.buffer = a.time_pointers.data() + begin;
    } else {
      b.buffer = a.texts.data() + begin;
      b.length = a.lengths.data() + begin;
    }
    b.u.indicator = c != nullptr && c->nullable ? a.indicators.data() + begin : nullptr;
  }
  unsigned int size = static_cast<unsigned int>(end - begin);
  if (mysql_stmt_attr_set(s.stmt, STMT_ATTR_ARRAY_SIZE, &size) != 0 ||
      mysql_stmt_bind_param(s.stmt, s.binds.data()) != 0 || mysql_stmt_execute(s.stmt) != 0) {
    return statement_error(connection, s.stmt);
  }
  connection.rows_stored += mysql_stmt_affected_rows(s.stmt);
  return std::nullopt;
}

// Room in every column's array for `n` rows.
void size_arrays(BulkState& s, const TableDescriptor& table, std::size_t n) {
  const std::size_t k = table.columns.size();
  for (std::size_t col = 0; col < k + 2; ++col) {
    ColumnArrays& a = s.arrays[col];
    const Column* c = col < k ? &table.columns[col] : nullptr;
    if (c != nullptr && c->nullable) a.indicators.resize(n);
    if (c == nullptr || is_integer(c->type)) {
      a.integers.resize(n);
    } else if (c->type == ColumnType::float64) {
      a.reals.resize(n);
    } else if (c->type == ColumnType::timestamp) {
      a.times.resize(n);
      a.time_pointers.resize(n);
    } else {
      a.texts.resize(n);
      a.lengths.resize(n);
    }
  }
}

// Row i of every column's array from record r, each value checked as
// check_values() does; the row's bytes in the packet (exactly), or the
// value's error.
std::optional<MysqlError> fill_row(BulkState& s, const Batch& batch, std::size_t i,
                                   std::size_t* bytes) {
  const RecordRef& r = batch.records[i];
  const auto& columns = batch.table.columns;
  const std::size_t k = columns.size();
  std::size_t n = 2 * (1 + 8);  // source_id, seq
  for (std::size_t col = 0; col < k; ++col) {
    const Column& c = columns[col];
    ColumnArrays& a = s.arrays[col];
    if (c.nullable) {
      const bool null = is_null(r.data, c);
      a.indicators[i] = static_cast<char>(null ? STMT_INDICATOR_NULL : STMT_INDICATOR_NONE);
      if (null) {
        n += 1;  // the indicator byte alone: a NULL sends no value, and is not checked
        continue;
      }
    }
    if (c.type == ColumnType::text) {
      const std::string_view t = read_text(r.data, c);
      a.texts[i] = t.data();
      a.lengths[i] = t.size();
      n += 1 + length_prefix(t.size()) + t.size();
    } else if (c.type == ColumnType::timestamp) {
      const std::int64_t micros = read_integer(r.data, c);
      const civil_time t = civil_time_of(micros);
      if (!fits_datetime(t))
        return value_out_of_range(c, r, "is outside DATETIME's years 1000-9999");
      a.times[i] = to_mysql_time(t);
      a.time_pointers[i] = &a.times[i];
      n += 1 + datetime_bytes(micros);
    } else if (c.type == ColumnType::float64) {
      const double v = read_float64(r.data, c);
      if (!std::isfinite(v)) return value_out_of_range(c, r, "is not a finite number");
      a.reals[i] = v;
      n += 1 + 8;
    } else {
      a.integers[i] = read_integer(r.data, c);
      n += 1 + 8;  // every integer as LONGLONG
    }
  }
  s.arrays[k].integers[i] = r.source_id;
  s.arrays[k + 1].integers[i] = r.seq;
  *bytes = n;
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
  auto& s = static_cast<BulkState&>(*c.path_state);
  const std::size_t n = batch.records.size();
  size_arrays(s, batch.table, n);
  // The whole array goes out as one packet, which the server drops the
  // connection for if it exceeds max_allowed_packet: cut by bytes, to the
  // byte. A row that does not fit even alone is refused as data.
  const std::size_t header = statement_bytes(batch.table.columns.size() + 2);
  const std::size_t payload = c.max_packet_payload();
  const std::size_t limit = payload > header ? payload - header : 0;
  // One pass over the records, row by row: each value is checked, put in
  // its column's array and counted towards the packet it goes in. A
  // batch's records lie spread over the pool and a large batch does not
  // stay in cache, so a pass per column fetched every record's lines once
  // per column. Nothing is sent until every record has passed its checks.
  s.cuts.clear();
  std::size_t begin = 0, bytes = 0;
  const std::uint32_t record_size = batch.table.record_size;
  for (std::size_t i = 0; i < n; ++i) {
    // A large batch's records no longer all sit in this core's cache when
    // the sink reads them: ask for a few records ahead.
    if (i + 4 < n) {
      const std::byte* ahead = batch.records[i + 4].data;
      for (std::uint32_t off = 0; off < record_size; off += 64) __builtin_prefetch(ahead + off);
    }
    std::size_t row = 0;
    if (auto e = fill_row(s, batch, i, &row)) return e;
    if (row > limit) {
      return record_too_large(batch.records[i], header + row, c.max_allowed_packet());
    }
    if (i > begin && bytes + row > limit) {
      s.cuts.push_back(i);
      begin = i;
      bytes = 0;
    }
    bytes += row;
  }
  s.cuts.push_back(n);
  begin = 0;
  for (const std::size_t end : s.cuts) {
    if (auto e = committed(c, [&] { return execute_rows(c, s, batch, begin, end); })) return e;
    begin = end;
  }
  return std::nullopt;
}

}  // namespace auditpipe::mysql
