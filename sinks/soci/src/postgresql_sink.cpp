#include "auditpipe/soci/postgresql_sink.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "auditpipe/detail/text_escape.h"
#include "auditpipe/status.h"
#include "auditpipe/timestamp.h"
#include "postgresql_connection.h"
#include "sql_text.h"

namespace auditpipe::soci_sink {

using detail::append_number;

namespace {

std::string column_type(const Column& c) {
  switch (c.type) {
    case ColumnType::boolean:
      return "BOOLEAN";
    case ColumnType::int8:
    case ColumnType::int16:
    case ColumnType::uint8:
      return "SMALLINT";
    case ColumnType::int32:
    case ColumnType::uint16:
      return "INTEGER";
    case ColumnType::int64:
    case ColumnType::uint32:
      return "BIGINT";
    case ColumnType::float64:
      return "DOUBLE PRECISION";
    case ColumnType::timestamp:
      return "TIMESTAMP(6) WITH TIME ZONE";
    case ColumnType::text:
      return "TEXT";
  }
  return "TEXT";
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
    case ColumnType::timestamp: {
      char buf[32];
      out.append(buf, timestamp{read_integer(record, c)}.format(buf));
      out += "+00";
      break;
    }
    case ColumnType::text:
      out += read_text(record, c);
      break;
    default:
      append_number(out, read_integer(record, c));
      break;
  }
}

PostgresError error_of(PGresult* r, PGconn* conn) {
  PostgresError e;
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  e.sqlstate = state ? state : "";
  e.message = r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn);
  while (!e.message.empty() && (e.message.back() == '\n' || e.message.back() == ' '))
    e.message.pop_back();
  return e;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

class PostgresqlSinkImpl final : public PostgresqlSink {
 public:
  explicit PostgresqlSinkImpl(PostgresConfig config) : config_(std::move(config)) {}

  void open(const TableDescriptor& table, const SinkContext& context) override {
    table_ = &table;
    path_ = config_.write_path == PostgresWritePath::insert ? PostgresWritePath::insert
                                                            : PostgresWritePath::copy;
    columns_.clear();
    for (const Column& c : table.columns) columns_ += quote_identifier(c.name) + ",";
    columns_ += quote_identifier(source_id_column) + "," + quote_identifier(seq_column);
    copy_sql_ = "COPY " + quote_identifier(table.name) + " (" + columns_ + ") FROM STDIN";
    {
      PostgresConnection setup(config_);
      try {
        prepare_table(setup.session(), table);
      } catch (const error&) {
        throw;
      } catch (const std::exception& e) {
        throw error("auditpipe: cannot prepare table " + std::string(table.name) + " on " +
                    config_.redacted_url + ": " + e.what());
      }
    }
    ConnectionPoolOptions pool = config_.pool;
    pool.max_size = config_.pool_size.value_or(std::max(1u, context.writers));
    pool_ = std::make_unique<ConnectionPool>(
        [this] { return std::make_unique<PostgresConnection>(config_); }, pool, true);
  }

  WriteResult write(const Batch& batch) noexcept override {
    try {
      ConnectionPool::Lease lease = pool_->acquire();
      auto& c = lease.as<PostgresConnection>();
      std::optional<PostgresError> e;
      if (path_ == PostgresWritePath::copy) {
        e = copy_batch(c, batch);
        // Some of these rows are there already (a retry after an ambiguous
        // failure): write the batch so that only those repeats are skipped.
        if (e && e->sqlstate == "23505" && !c.broken()) e = insert_batch(c, batch);
      } else {
        e = insert_batch(c, batch);
      }
      if (!e) return WriteResult::success();
      std::string message = e->describe();
      if (c.broken() || starts_with(e->sqlstate, "08") || starts_with(e->sqlstate, "57P")) {
        lease.invalidate();
        return WriteResult::transient_error(std::move(message));
      }
      if (starts_with(e->sqlstate, "22") || starts_with(e->sqlstate, "23")) {
        return WriteResult::rejection(std::move(message));
      }
      return WriteResult::transient_error(std::move(message));
    } catch (const std::exception& e) {
      return WriteResult::transient_error(e.what());
    }
  }

  void close() noexcept override { pool_.reset(); }
  std::string describe() const override { return config_.redacted_url; }
  bool accepts_nul_in_text() const noexcept override { return false; }
  // Two connections measured faster than one on every write path
  // (bench/write_paths, README).
  unsigned preferred_writers() const noexcept override { return 2; }
  std::optional<ConnectionPoolStats> connection_pool_stats() const override {
    if (!pool_) return std::nullopt;
    return pool_->stats();
  }
  PostgresWritePath write_path() const noexcept override { return path_; }

 private:
  void prepare_table(::soci::session& sql, const TableDescriptor& table) {
    const std::string name(table.name);
    std::set<std::string> present;
    ::soci::rowset<std::string> columns =
        (sql.prepare << "SELECT lower(column_name) FROM information_schema.columns WHERE "
                        "table_schema = current_schema() AND table_name = :t",
         ::soci::use(name));
    for (const auto& c : columns) present.insert(c);
    if (present.empty()) {
      if (!config_.create_table) {
        throw error("auditpipe: table " + name + " does not exist on " + config_.redacted_url +
                    " (and create_table=false)");
      }
      std::string ddl = "CREATE TABLE IF NOT EXISTS " + quote_identifier(name) + " (";
      for (const Column& c : table.columns) {
        ddl += quote_identifier(c.name) + " " + column_type(c) + " NOT NULL, ";
      }
      ddl += quote_identifier(source_id_column) + " BIGINT NOT NULL, " +
             quote_identifier(seq_column) + " BIGINT NOT NULL, PRIMARY KEY (" +
             quote_identifier(source_id_column) + ", " + quote_identifier(seq_column) + "))";
      sql << ddl;
      return;
    }
    std::string missing;
    auto need = [&](std::string_view column) {
      std::string lower(column);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](char ch) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      });
      if (!present.count(lower)) missing += (missing.empty() ? "" : ", ") + std::string(column);
    };
    for (const Column& c : table.columns) need(c.name);
    need(source_id_column);
    need(seq_column);
    if (!missing.empty()) {
      throw error("auditpipe: table " + name + " on " + config_.redacted_url +
                  " lacks the columns the record needs: " + missing);
    }
    // ON CONFLICT (source_id, seq) needs a unique index on exactly that pair.
    const std::string regclass = quote_identifier(name);
    std::map<std::string, std::set<std::string>> unique;
    ::soci::rowset<::soci::row> rows =
        (sql.prepare
             << "SELECT i.indexrelid::regclass::text, lower(a.attname::text) FROM pg_index i "
                "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
                "WHERE i.indrelid = to_regclass(:t) AND i.indisunique",
         ::soci::use(regclass));
    for (const auto& r : rows) unique[r.get<std::string>(0)].insert(r.get<std::string>(1));
    for (const auto& [index, cols] : unique) {
      if (cols == std::set<std::string>{"seq", "source_id"}) return;
    }
    throw error("auditpipe: table " + name + " on " + config_.redacted_url +
                " has no unique key on (source_id, seq); auditpipe needs it so that a retried "
                "batch is never written twice");
  }

  std::optional<PostgresError> copy_batch(PostgresConnection& c, const Batch& batch) {
    std::string& data = c.copy_data;
    data.clear();
    for (const RecordRef& r : batch.records) {
      for (const Column& col : batch.table.columns) {
        if (col.type == ColumnType::text) {
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
    PGresult* r = PQexec(c.native(), copy_sql_.c_str());
    if (PQresultStatus(r) != PGRES_COPY_IN) {
      auto e = error_of(r, c.native());
      PQclear(r);
      return e;
    }
    PQclear(r);
    std::optional<PostgresError> e;
    if (PQputCopyData(c.native(), data.data(), static_cast<int>(data.size())) != 1 ||
        PQputCopyEnd(c.native(), nullptr) != 1) {
      e = PostgresError{"", PQerrorMessage(c.native())};
    }
    while (PGresult* result = PQgetResult(c.native())) {
      if (!e && PQresultStatus(result) != PGRES_COMMAND_OK) e = error_of(result, c.native());
      PQclear(result);
    }
    return e;
  }

  std::optional<PostgresError> insert_batch(PostgresConnection& c, const Batch& batch) {
    const std::size_t per_row = batch.table.columns.size() + 2;
    const std::size_t rows_per_statement = 65535 / per_row;  // the protocol's parameter limit
    for (std::size_t begin = 0; begin < batch.records.size(); begin += rows_per_statement) {
      const std::size_t n = std::min(rows_per_statement, batch.records.size() - begin);
      std::string& values = c.param_data;
      values.clear();
      std::vector<std::size_t> offsets;
      offsets.reserve(n * per_row);
      for (std::size_t i = begin; i < begin + n; ++i) {
        const RecordRef& r = batch.records[i];
        for (const Column& col : batch.table.columns) {
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
      for (std::size_t k = 0; k < offsets.size(); ++k) c.params[k] = values.data() + offsets[k];
      if (c.insert_rows != n) {  // the statement text depends only on the row count
        c.insert_rows = n;
        std::string& sql = c.insert_sql;
        sql = "INSERT INTO " + quote_identifier(batch.table.name) + " (" + columns_ + ") VALUES ";
        std::size_t p = 1;
        for (std::size_t i = 0; i < n; ++i) {
          sql += i ? ",(" : "(";
          for (std::size_t k = 0; k < per_row; ++k) sql += (k ? ",$" : "$") + std::to_string(p++);
          sql += ')';
        }
        sql += " ON CONFLICT (" + quote_identifier(source_id_column) + ", " +
               quote_identifier(seq_column) + ") DO NOTHING";
      }
      PGresult* r =
          PQexecParams(c.native(), c.insert_sql.c_str(), static_cast<int>(c.params.size()), nullptr,
                       c.params.data(), nullptr, nullptr, 0);
      if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        auto e = error_of(r, c.native());
        PQclear(r);
        return e;
      }
      PQclear(r);
    }
    return std::nullopt;
  }

  const PostgresConfig config_;
  const TableDescriptor* table_ = nullptr;
  PostgresWritePath path_ = PostgresWritePath::copy;
  std::string columns_;
  std::string copy_sql_;
  std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace

std::shared_ptr<PostgresqlSink> open_postgresql(std::string_view url) {
  return std::make_shared<PostgresqlSinkImpl>(parse_postgres_url(url));
}

}  // namespace auditpipe::soci_sink
