// The PostgreSQL sink on the SQL sink skeleton: COPY by default (its binary
// format where the server's column types allow, binary_copy.h), INSERT
// ... ON CONFLICT for a batch whose rows may be there already, both through
// libpq on the pooled connection; SQLSTATEs sorted for the skeleton.
#include "auditpipe/postgresql/postgresql_sink.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include "auditpipe/detail/text_escape.h"

#include "auditpipe/diagnostics.h"
#include "auditpipe/timestamp.h"
#include "postgresql_connection.h"
#include "postgresql_dialect.h"

namespace auditpipe::postgresql {

using detail::append_number;

namespace {

// `t` in PostgreSQL's ISO input form, "YYYY-MM-DD HH:MM:SS.ffffff+00", with
// as many year digits as it takes and years up to 0 as "... BC" (year 0 is
// 1 BC): the core's timestamp::format() writes four digits and clamps
// negative years, which would store 12024 as 2024. Every microsecond count
// PostgreSQL's timestamptz holds (4714-11-24 BC to 294276 AD, beyond
// INT64_MAX microseconds) is then stored exactly; the server refuses
// earlier ones as out of range (22008), so they are rejected and counted
// like any other refused value.
void append_timestamp(std::string& out, timestamp t) {
  const civil_time c = t.civil();
  const bool bc = c.year <= 0;
  // The year of a resolved timestamp has at most 6 digits (292,277 years
  // either side of 1970); 24 is room for any int64.
  char buf[64];
  char* p = buf + 24;
  char* const year_end = p;
  for (auto y = static_cast<std::uint64_t>(bc ? 1 - c.year : c.year); y != 0 || year_end - p < 4;
       y /= 10) {
    *--p = static_cast<char>('0' + y % 10);
  }
  char* q = year_end;
  auto put = [&q](unsigned v, int width) {
    for (int i = width - 1; i >= 0; --i) {
      q[i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    q += width;
  };
  *q++ = '-';
  put(c.month, 2);
  *q++ = '-';
  put(c.day, 2);
  *q++ = ' ';
  put(c.hour, 2);
  *q++ = ':';
  put(c.minute, 2);
  *q++ = ':';
  put(c.second, 2);
  *q++ = '.';
  put(c.microsecond, 6);
  out.append(p, q);
  out += bc ? "+00 BC" : "+00";
}

// One value in PostgreSQL's text input form (what COPY and text parameters
// take). Text is appended as it is; COPY escapes it separately.
void append_value(std::string& out, const std::byte* record, const Column& c) {
  switch (c.type) {
    case ColumnType::boolean:
      out += read_integer(record, c) ? 't' : 'f';
      break;
    case ColumnType::float64: {
      const double v = read_float64(record, c);
      if (std::isnan(v)) {
        out += "NaN";
      } else if (std::isinf(v)) {
        out += v > 0 ? "Infinity" : "-Infinity";
      } else {
        append_number(out, v);
      }
      break;
    }
    case ColumnType::timestamp:
      append_timestamp(out, timestamp{read_integer(record, c)});
      break;
    case ColumnType::text:
      out += read_text(record, c);
      break;
    default:
      append_number(out, read_integer(record, c));
      break;
  }
}

// In the INSERT path's parameter offsets: this parameter is NULL.
constexpr std::size_t null_parameter = static_cast<std::size_t>(-1);

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// SQLSTATEs that no retry mends until someone changes the database's
// configuration: written as WriteResult::permanent (health down with the
// server's message, retried at the slowest backoff), so that a fix is
// picked up without a restart.
constexpr std::string_view configuration_states[] = {
    "42501",  // insufficient_privilege: INSERT revoked, or the table's owner changed
    "42P01",  // undefined_table: the table was dropped or renamed
    "42703",  // undefined_column: a column was dropped or renamed
    "42804",  // datatype_mismatch: a column's type was altered
    "3F000",  // invalid_schema_name: the schema on the search path is gone
    // feature_not_supported: COPY into a table under row-level security
    // with write_path=copy (auto writes INSERTs instead).
    "0A000",
    // The server's answers to a session it ends or refuses: the database
    // dropped or renamed, pg_hba.conf refusing the user, the password
    // changed. (A new connection that fails for these reasons fails in
    // the pool's connect, before any write path sees a SQLSTATE.)
    "3D000",  // invalid_catalog_name
    "28000",  // invalid_authorization_specification
    "28P01",  // invalid_password
};

WriteFailure::Kind kind_of(PostgresqlConnection& c, const PostgresqlError& e) {
  // A connection the failure left broken is closed whatever the reason: a
  // new one may get past it.
  if (c.broken()) return WriteFailure::Kind::connection;
  for (std::string_view state : configuration_states) {
    if (e.sqlstate == state) return WriteFailure::Kind::configuration;
  }
  // 57P03 cannot_connect_now: "the database system is in recovery mode".
  // 25006 read_only_sql_transaction: this server is (now) a standby, e.g.
  // an old primary brought back as one. Either way another host may take
  // the batch: close, and the next connect tries the other hosts first
  // (write_batch() avoids this one; a standby is refused there by
  // target_session_attrs=read-write anyway).
  if (starts_with(e.sqlstate, "08") || starts_with(e.sqlstate, "57P") || e.sqlstate == "25006") {
    return WriteFailure::Kind::connection;
  }
  if (starts_with(e.sqlstate, "22") || starts_with(e.sqlstate, "23"))
    return WriteFailure::Kind::data;
  return WriteFailure::Kind::other;
}

class PostgresqlSinkImpl final : public PostgresqlSink {
 public:
  explicit PostgresqlSinkImpl(PostgresqlConfig config)
      : PostgresqlSink(postgresql_dialect, config.sink), config_(std::move(config)) {}
  // The pool's openers call connect() until the pool is gone.
  ~PostgresqlSinkImpl() override { close(); }
  PostgresqlSinkImpl(const PostgresqlSinkImpl&) = delete;
  PostgresqlSinkImpl& operator=(const PostgresqlSinkImpl&) = delete;

  bool accepts_nul_in_text() const noexcept override { return false; }
  // Two connections measured faster than one on every write path
  // (bench/write_paths, README).
  unsigned preferred_writers() const noexcept override { return 2; }

 private:
  std::unique_ptr<SqlConnection> connect() override {
    return std::make_unique<PostgresqlConnection>(config_, cancellation(), &health_);
  }

  void table_ready(SqlConnection&) override {
    path_ = config_.write_path == WritePath::insert ? WritePath::insert : WritePath::copy;
    copy_sql_ = "COPY " + table_text().table + " (" + table_text().columns + ") FROM STDIN";
    binary_copy_sql_ = "BEGIN; " + copy_sql_ + " (FORMAT binary)";
    // The table's columns and types, in one string (as a literal: a simple
    // query, which may hold several statements, takes no parameters).
    std::string name_literal = "'";
    for (const char ch : std::string(table().name))
      name_literal += ch == '\'' ? "''" : std::string(1, ch);
    name_literal += "'";
    types_query_ =
        "SELECT string_agg(attname || ':' || atttypid::bigint, ',' ORDER BY attnum) AS types FROM "
        "pg_attribute WHERE attrelid = to_regclass(quote_ident(" +
        name_literal + ")) AND attnum > 0 AND NOT attisdropped";
    // Binary values carry no type: a column whose type an ALTER TABLE
    // changed would read them as its new type, often without an error
    // (bigint's 8 bytes are a valid numeric, int's 4 a valid real). So the
    // COPY's transaction commits only if the types are still those the
    // values were encoded for; otherwise the cast of the types' string to
    // an integer fails it (22P02), and the batch is encoded again.
    check_and_commit_sql_ = "SELECT types::integer FROM (" + types_query_ +
                            ") t WHERE types IS DISTINCT FROM $TYPES$; COMMIT";
  }

  // The table's column types on this connection's server, for binary COPY
  // (each server of a host list may have its own table), by the exact
  // names COPY's quoted column list resolves to.
  void prepare_writes(SqlConnection& connection) override {
    auto& c = static_cast<PostgresqlConnection&>(connection);
    c.binary_columns.clear();
    if (path_ != WritePath::copy) return;
    std::map<std::string, std::uint32_t> oids;
    for (const auto& row :
         c.catalog_rows("SELECT attname, atttypid::bigint FROM pg_attribute WHERE attrelid = "
                        "to_regclass(quote_ident($1)) AND attnum > 0 AND NOT attisdropped",
                        std::string(table().name))) {
      if (row.size() == 2) oids[row[0]] = static_cast<std::uint32_t>(std::stoul(row[1]));
    }
    std::vector<WireType> wire;
    for (const Column& col : table().columns) {
      const auto it = oids.find(std::string(col.name));
      const auto w = it == oids.end() ? std::nullopt : wire_type(col.type, it->second);
      if (!w) return;  // a type without a binary form here: text
      wire.push_back(*w);
    }
    for (const std::string_view key : {source_id_column, seq_column}) {
      const auto it = oids.find(std::string(key));
      if (it == oids.end() || wire_type(ColumnType::int64, it->second) != WireType::int8) return;
    }
    const auto types = c.query_rows(types_query_, {});
    if (types.empty() || types[0].empty() || !types[0][0]) return;
    c.binary_types = *types[0][0];
    c.binary_columns = std::move(wire);
  }

  std::optional<WriteFailure> write_batch(SqlConnection& connection, const Batch& batch) override {
    auto& c = static_cast<PostgresqlConnection&>(connection);
    std::optional<PostgresqlError> e;
    if (path_ == WritePath::copy && !c.copy_refused) {
      e = copy_batch(c, batch);
      if (e && e->sqlstate == "23505" && !c.broken()) {
        // Some of these rows are there already (a retry after an ambiguous
        // failure): write the batch so that only those repeats are skipped.
        e = insert_batch(c, batch);
      } else if (e && e->sqlstate == "0A000" && !c.broken() &&
                 config_.write_path == WritePath::automatic) {
        diagnostics()->warn(
            "auditpipe: {}: the server refuses COPY into {} ({}): this connection writes "
            "INSERTs instead (write_path=insert says so up front)",
            c.server(), table_text().table, e->describe());
        c.copy_refused = true;
        e = insert_batch(c, batch);
      }
    } else {
      e = insert_batch(c, batch);
    }
    if (!e) return std::nullopt;
    // This server is (now) a standby or in recovery: the next connects try
    // the other hosts first, or with target_session_attrs=any they would
    // land on it again.
    if (e->sqlstate == "25006" || e->sqlstate == "57P03") health_.avoid(c.endpoint_index());
    return WriteFailure{kind_of(c, *e), e->describe()};
  }

  std::optional<PostgresqlError> copy_batch(PostgresqlConnection& c, const Batch& batch) {
    std::string& data = c.copy_data;
    data.clear();
    // Binary while this connection's column types allow it; a second try
    // after reading them again, when the server found the values malformed.
    for (int attempt = 0; attempt < 2 && !c.binary_columns.empty(); ++attempt) {
      data.clear();
      if (!append_binary_copy(data, batch, c.binary_columns)) break;
      auto e = send_copy(c, binary_copy_sql_);
      if (!e) e = check_types_and_commit(c);
      if (e && !c.broken()) rollback(c);
      // A column's type changed under this connection (ALTER TABLE): the
      // types differ from those the values were encoded for (22P02, from
      // check_types_and_commit), or the server found the values malformed
      // (22P03) or too short (08P01).
      if (attempt == 1 || !e || c.broken() ||
          (e->sqlstate != "22P02" && e->sqlstate != "22P03" && e->sqlstate != "08P01")) {
        return e;
      }
      if (e->sqlstate == "22P02") {  // check_types_and_commit()'s: the server took the values
        // A type the open would refuse (double precision narrowed to
        // real) was written in it: the values rounded, without a word.
        try {
          check_table_again(c);
        } catch (const error& refused) {
          return PostgresqlError{
              "42804", std::string(refused.what()) + " (its columns changed while the logger ran)"};
        }
        diagnostics()->warn(
            "auditpipe: {}: the column types of {} changed since this connection read them (an "
            "ALTER TABLE): the batch is rolled back and sent in the new types",
            c.server(), table_text().table);
      } else {
        diagnostics()->warn(
            "auditpipe: {} refused a binary COPY into {} ({}): reading its column types again",
            c.server(), table_text().table, e->describe());
      }
      prepare_writes(c);
    }
    data.clear();
    for (const RecordRef& r : batch.records) {
      for (const Column& col : batch.table.columns) {
        if (is_null(r.data, col)) {
          data += "\\N";  // COPY text's NULL
        } else if (col.type == ColumnType::text) {
          // COPY's text format: backslash, tab, newline and carriage return
          // escaped.
          detail::append_escaped(data, read_text(r.data, col), detail::backslash_escapes);
        } else {
          append_value(data, r.data, col);
        }
        data += '\t';
      }
      append_number(data, r.source_id);
      data += '\t';
      append_number(data, r.seq);
      data += '\n';
    }
    return send_copy(c, copy_sql_);
  }

  // After a binary COPY in its transaction: commits it if the table's
  // types are those its values were encoded for (see table_ready()).
  std::optional<PostgresqlError> check_types_and_commit(PostgresqlConnection& c) const {
    std::string sql = check_and_commit_sql_;
    std::string literal = "'";
    for (const char ch : c.binary_types) literal += ch == '\'' ? "''" : std::string(1, ch);
    literal += "'";
    sql.replace(sql.find("$TYPES$"), 7, literal);
    if (PQsendQuery(c.native(), sql.c_str()) != 1) {
      return PostgresqlError{"", one_line(PQerrorMessage(c.native()))};
    }
    std::optional<PostgresqlError> e;
    while (PGresult* result = PQgetResult(c.native())) {
      const auto status = PQresultStatus(result);
      if (!e && status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        e = error_of(result, c.native());
      PQclear(result);
    }
    return e;
  }

  // Ends a failed transaction (a statement after an error in a multi-statement
  // query is not run: its COMMIT neither).
  static void rollback(PostgresqlConnection& c) { PQclear(PQexec(c.native(), "ROLLBACK")); }

  // Runs `sql` (a COPY ... FROM STDIN) with c.copy_data as its input.
  static std::optional<PostgresqlError> send_copy(PostgresqlConnection& c, const std::string& sql) {
    const std::string& data = c.copy_data;
    PGresult* r = PQexec(c.native(), sql.c_str());
    if (PQresultStatus(r) != PGRES_COPY_IN) {
      auto e = error_of(r, c.native());
      PQclear(r);
      return e;
    }
    PQclear(r);
    std::optional<PostgresqlError> e;
    if (PQputCopyData(c.native(), data.data(), static_cast<int>(data.size())) != 1 ||
        PQputCopyEnd(c.native(), nullptr) != 1) {
      e = PostgresqlError{"", one_line(PQerrorMessage(c.native()))};
    }
    while (PGresult* result = PQgetResult(c.native())) {
      if (!e && PQresultStatus(result) != PGRES_COMMAND_OK) e = error_of(result, c.native());
      PQclear(result);
    }
    return e;
  }

  std::optional<PostgresqlError> insert_batch(PostgresqlConnection& c, const Batch& batch) {
    const std::size_t per_row = batch.table.columns.size() + 2;
    const std::size_t rows_per_statement = 65535 / per_row;  // the protocol's parameter limit
    for (std::size_t begin = 0; begin < batch.records.size(); begin += rows_per_statement) {
      const std::size_t n = std::min(rows_per_statement, batch.records.size() - begin);
      std::string& values = c.param_data;
      values.clear();
      std::vector<std::size_t>& offsets = c.param_offsets;
      offsets.clear();
      for (std::size_t i = begin; i < begin + n; ++i) {
        const RecordRef& r = batch.records[i];
        for (const Column& col : batch.table.columns) {
          if (is_null(r.data, col)) {
            offsets.push_back(null_parameter);  // a null paramValues entry: SQL NULL
            continue;
          }
          offsets.push_back(values.size());
          append_value(values, r.data, col);
          values += '\0';
        }
        offsets.push_back(values.size());
        append_number(values, r.source_id);
        values += '\0';
        offsets.push_back(values.size());
        append_number(values, r.seq);
        values += '\0';
      }
      c.params.resize(offsets.size());
      for (std::size_t k = 0; k < offsets.size(); ++k) {
        c.params[k] = offsets[k] == null_parameter ? nullptr : values.data() + offsets[k];
      }
      if (c.insert_rows != n) {  // the statement text depends only on the row count
        c.insert_rows = n;
        std::string& sql = c.insert_sql;
        sql = table_text().insert_head;
        std::size_t p = 1;
        for (std::size_t i = 0; i < n; ++i) {
          sql += i ? ",(" : "(";
          for (std::size_t k = 0; k < per_row; ++k) sql += (k ? ",$" : "$") + std::to_string(p++);
          sql += ')';
        }
        sql += table_text().insert_tail;
      }
      PGresult* r =
          PQexecParams(c.native(), c.insert_sql.c_str(), static_cast<int>(c.params.size()), nullptr,
                       c.params.data(), nullptr, nullptr, 0);
      if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        auto e = error_of(r, c.native());
        PQclear(r);
        return e;
      }
      // ON CONFLICT DO NOTHING: the rows inserted, fewer where keys were there.
      if (std::strtoull(PQcmdTuples(r), nullptr, 10) < n) c.skipped_rows = true;
      PQclear(r);
    }
    return std::nullopt;
  }

  const PostgresqlConfig config_;
  HostHealth health_{config_.endpoints.size()};
  std::string copy_sql_;
  std::string binary_copy_sql_;
  std::string types_query_;           ///< the table's columns and types, as one string
  std::string check_and_commit_sql_;  ///< after a binary COPY (table_ready())
};

}  // namespace

std::shared_ptr<PostgresqlSink> open(std::string_view url) {
  return std::make_shared<PostgresqlSinkImpl>(parse_postgresql_url(url, UrlUse::write));
}

}  // namespace auditpipe::postgresql

namespace auditpipe::postgresql {

SqlDatabaseConnection connect_database(std::string_view url) {
  // Readers too (auditpipe verify): they may ask for a standby.
  const PostgresqlConfig config = parse_postgresql_url(url, UrlUse::read);
  const Cancellation never;  // the connect's waits; nothing cancels them
  SqlDatabaseConnection db;
  auto connection = std::make_unique<PostgresqlConnection>(config, never);
  db.connection = std::move(connection);
  db.dialect = &postgresql_dialect;
  db.redacted_url = config.sink.redacted_url;
  db.table_location = config.sink.table_location;
  for (std::size_t i = 0; i < config.keywords.size(); ++i) {
    if (config.keywords[i] == "password") db.password = config.values[i];
  }
  return db;
}

}  // namespace auditpipe::postgresql
