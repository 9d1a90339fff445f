// SqliteConnection: the SQLite sink's one connection, a SOCI session on
// the file with the prepared insert and the vectors bound to it. Private
// to the sink; the skeleton holds it and lends it to one write at a time,
// and cancel_io() interrupts the statement running on it
// (sqlite3_interrupt, which SQLite allows from any thread).
#pragma once

#include <soci/soci.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/sink/sql_sink.h"

namespace auditpipe::sqlite {

class SqliteConnection final : public SqlConnection {
 public:
  ~SqliteConnection() override {
    insert.reset();
    try {
      session.close();
    } catch (...) {
      // Closing cannot fail in a way the caller could act on.
    }
  }

  // Never asked: the sink keeps its one connection outside any pool.
  bool ping() noexcept override { return true; }
  // For the skeleton's table check (sqlite_connection.cpp).
  std::vector<std::vector<std::string>> catalog_rows(std::string_view query,
                                                     const std::string& table) override;
  void execute_ddl(const std::string& sql) override;
  std::string server() const override { return path; }
  void cancel_io() noexcept override;

  // One bound vector per column, in column order; SOCI keeps pointers to
  // them, so they are created once and never moved.
  struct Bound {
    const Column* column;
    std::vector<long long> integers;
    std::vector<double> reals;
    std::vector<std::string> texts;
  };

  ::soci::session session;
  std::string path;  // the file, for messages
  std::vector<Bound> bound;
  std::vector<long long> source_ids;
  std::vector<long long> seqs;
  std::unique_ptr<::soci::statement> insert;  // destroyed before the session closes
};

}  // namespace auditpipe::sqlite
