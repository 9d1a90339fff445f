#include "auditpipe/soci/sqlite_sink.h"

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <mutex>
#include <string>
#include <vector>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"
#include "sql_text.h"

namespace auditpipe::soci_sink {

namespace {

struct SqliteConfig {
  std::string url;  // as given, for messages (SQLite URLs carry no password)
  std::string path;
  bool create_table = true;
  std::string synchronous = "NORMAL";
  int busy_timeout_ms = 5000;
};

[[noreturn]] void bad_url(std::string_view url, const std::string& why) {
  throw error("auditpipe: malformed SQLite URL '" + std::string(url) + "': " + why);
}

SqliteConfig parse_sqlite_url(std::string_view url) {
  SqliteConfig c;
  c.url = std::string(url);
  constexpr std::string_view prefix = "sqlite://";
  if (url.size() < prefix.size() ||
      !std::equal(prefix.begin(), prefix.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    bad_url(url, "expected sqlite:///absolute/path.db or sqlite://relative/path.db");
  }
  std::string_view rest = url.substr(prefix.size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  try {
    c.path = percent_decode(rest);
    for (const auto& [key, value] : parse_query(query)) {
      if (key == "create_table") {
        if (value != "true" && value != "false") bad_url(url, "create_table must be true or false");
        c.create_table = value == "true";
      } else if (key == "synchronous") {
        std::string v = value;
        std::transform(v.begin(), v.end(), v.begin(), [](char ch) {
          return static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        });
        if (v != "NORMAL" && v != "FULL") bad_url(url, "synchronous must be normal or full");
        c.synchronous = v;
      } else if (key == "busy_timeout_ms") {
        const auto [p, ec] =
            std::from_chars(value.data(), value.data() + value.size(), c.busy_timeout_ms);
        if (ec != std::errc() || p != value.data() + value.size() || c.busy_timeout_ms < 0) {
          bad_url(url, "busy_timeout_ms must be a non-negative integer");
        }
      } else {
        bad_url(url,
                "unknown option '" + key + "' (known: create_table, synchronous, busy_timeout_ms)");
      }
    }
  } catch (const error& e) {
    const std::string_view what = e.what();
    if (what.find("malformed SQLite URL") != std::string_view::npos) throw;
    bad_url(url, std::string(what));
  }
  if (c.path.empty()) bad_url(url, "no database file path");
  if (c.path.find('\0') != std::string::npos) bad_url(url, "the path contains a NUL byte");
  // SOCI's SQLite connection string treats '=' and '"' as syntax.
  if (c.path.find_first_of("=\"") != std::string::npos) {
    bad_url(url, "paths containing '=' or '\"' are not supported");
  }
  return c;
}

// SQLite result codes that a later attempt can get past (the database is
// busy, the disk is full, the file went away); everything about the data
// itself is a rejection.
bool is_data_error(int code) {
  switch (code & 0xFF) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return true;
    default:
      return false;
  }
}

std::string sqlite_type(ColumnType t) {
  switch (t) {
    case ColumnType::float64:
      return "REAL";
    case ColumnType::text:
      return "TEXT";
    default:
      return "INTEGER";
  }
}

class SqliteSink final : public Sink {
 public:
  explicit SqliteSink(SqliteConfig config) : config_(std::move(config)) {}

  void open(const TableDescriptor& table, const SinkContext&) override {
    table_ = &table;
    try {
      session_.open(::soci::sqlite3, config_.path);
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot open SQLite database '" + config_.path + "': " + e.what() +
                  " (does the directory exist and is it writable?)");
    }
    try {
      std::string mode;
      session_ << "PRAGMA journal_mode=WAL", ::soci::into(mode);
      session_ << "PRAGMA synchronous=" + config_.synchronous;
      session_ << "PRAGMA busy_timeout=" + std::to_string(config_.busy_timeout_ms);
      prepare_table(table);
      prepare_insert(table);
    } catch (const error&) {
      throw;
    } catch (const std::exception& e) {
      throw error("auditpipe: cannot prepare SQLite table '" + std::string(table.name) + "' in '" +
                  config_.path + "': " + e.what());
    }
  }

  WriteResult write(const Batch& batch) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      fill(batch);
      ::soci::transaction tx(session_);
      insert_->execute(true);
      tx.commit();
      return WriteResult::success();
    } catch (const ::soci::sqlite3_soci_error& e) {
      std::string message = "SQLite error " + std::to_string(e.result()) + ": " + e.what();
      return is_data_error(e.result()) ? WriteResult::rejection(std::move(message))
                                       : WriteResult::transient_error(std::move(message));
    } catch (const std::exception& e) {
      return WriteResult::transient_error(e.what());
    }
  }

  void close() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      insert_.reset();
      session_.close();
    } catch (...) {
      // Closing cannot fail in a way the caller could act on.
    }
  }

  std::string describe() const override { return config_.url; }

 private:
  // One bound vector per column, in column order; SOCI keeps pointers to
  // them, so they are created once and never moved.
  struct Bound {
    const Column* column;
    std::vector<long long> integers;
    std::vector<double> reals;
    std::vector<std::string> texts;
  };

  bool table_exists(const std::string& name) {
    int count = 0;
    session_ << "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = :n",
        ::soci::use(name), ::soci::into(count);
    return count != 0;
  }

  void prepare_table(const TableDescriptor& table) {
    const std::string name(table.name);
    if (!table_exists(name)) {
      if (!config_.create_table) {
        throw error("auditpipe: table '" + name + "' does not exist in '" + config_.path +
                    "' (and create_table=false)");
      }
      std::string ddl = "CREATE TABLE IF NOT EXISTS " + quote_identifier(name) + " (";
      for (const Column& c : table.columns) {
        ddl += quote_identifier(c.name) + " " + sqlite_type(c.type) + " NOT NULL, ";
      }
      ddl += quote_identifier(source_id_column) + " INTEGER NOT NULL, " +
             quote_identifier(seq_column) + " INTEGER NOT NULL, UNIQUE (" +
             quote_identifier(source_id_column) + ", " + quote_identifier(seq_column) + ")) STRICT";
      session_ << ddl;
      return;
    }
    check_columns(table);
    check_unique_key(name);
  }

  void check_columns(const TableDescriptor& table) {
    const std::string name(table.name);
    std::vector<std::string> present;
    ::soci::rowset<::soci::row> rows =
        (session_.prepare << "SELECT name FROM pragma_table_info(:t)", ::soci::use(name));
    for (const auto& row : rows) present.push_back(lower(row.get<std::string>(0)));
    std::string missing;
    auto need = [&](std::string_view column) {
      if (std::find(present.begin(), present.end(), lower(std::string(column))) == present.end()) {
        missing += (missing.empty() ? "" : ", ") + std::string(column);
      }
    };
    for (const Column& c : table.columns) need(c.name);
    need(source_id_column);
    need(seq_column);
    if (!missing.empty()) {
      throw error("auditpipe: table '" + name + "' in '" + config_.path +
                  "' lacks the columns the record needs: " + missing);
    }
  }

  void check_unique_key(const std::string& name) {
    ::soci::rowset<::soci::row> indexes =
        (session_.prepare << "SELECT name FROM pragma_index_list(:t) WHERE \"unique\" = 1",
         ::soci::use(name));
    std::vector<std::string> unique_indexes;
    for (const auto& row : indexes) unique_indexes.push_back(row.get<std::string>(0));
    for (const auto& index : unique_indexes) {
      std::vector<std::string> columns;
      ::soci::rowset<::soci::row> info =
          (session_.prepare << "SELECT name FROM pragma_index_info(:i)", ::soci::use(index));
      for (const auto& row : info) columns.push_back(lower(row.get<std::string>(0)));
      std::sort(columns.begin(), columns.end());
      if (columns == std::vector<std::string>{"seq", "source_id"}) return;
    }
    throw error("auditpipe: table '" + name + "' in '" + config_.path +
                "' has no unique key on (source_id, seq); auditpipe needs it so that a retried "
                "batch is never written twice");
  }

  void prepare_insert(const TableDescriptor& table) {
    bound_.reserve(table.columns.size());
    for (const Column& c : table.columns) bound_.push_back(Bound{&c, {}, {}, {}});
    insert_ = std::make_unique<::soci::statement>(session_);
    std::string columns, values;
    for (Bound& b : bound_) {
      columns += quote_identifier(b.column->name) + ", ";
      values += "?, ";
      if (b.column->type == ColumnType::text) {
        insert_->exchange(::soci::use(b.texts));
      } else if (b.column->type == ColumnType::float64) {
        insert_->exchange(::soci::use(b.reals));
      } else {
        insert_->exchange(::soci::use(b.integers));
      }
    }
    insert_->exchange(::soci::use(source_ids_));
    insert_->exchange(::soci::use(seqs_));
    // Only a repeat of (source_id, seq) is skipped; any other constraint
    // failure still fails the batch.
    const std::string sql = "INSERT INTO " + quote_identifier(table.name) + " (" + columns +
                            quote_identifier(source_id_column) + ", " +
                            quote_identifier(seq_column) + ") VALUES (" + values +
                            "?, ?) ON CONFLICT (" + quote_identifier(source_id_column) + ", " +
                            quote_identifier(seq_column) + ") DO NOTHING";
    insert_->alloc();
    insert_->prepare(sql);
    insert_->define_and_bind();
  }

  void fill(const Batch& batch) {
    const std::size_t n = batch.records.size();
    source_ids_.resize(n);
    seqs_.resize(n);
    for (Bound& b : bound_) {
      if (b.column->type == ColumnType::text) {
        b.texts.resize(n);
      } else if (b.column->type == ColumnType::float64) {
        b.reals.resize(n);
      } else {
        b.integers.resize(n);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const RecordRef& r = batch.records[i];
      source_ids_[i] = r.source_id;
      seqs_[i] = r.seq;
      for (Bound& b : bound_) {
        if (b.column->type == ColumnType::text) {
          b.texts[i].assign(read_text(r.data, *b.column));
        } else if (b.column->type == ColumnType::float64) {
          b.reals[i] = read_float64(r.data, *b.column);
        } else {
          b.integers[i] = read_integer(r.data, *b.column);
        }
      }
    }
  }

  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    return s;
  }

  const SqliteConfig config_;
  const TableDescriptor* table_ = nullptr;
  std::mutex mutex_;
  ::soci::session session_;
  std::vector<Bound> bound_;
  std::vector<long long> source_ids_;
  std::vector<long long> seqs_;
  std::unique_ptr<::soci::statement> insert_;
};

}  // namespace

std::shared_ptr<Sink> open_sqlite(std::string_view url) {
  return std::make_shared<SqliteSink>(parse_sqlite_url(url));
}

}  // namespace auditpipe::soci_sink
