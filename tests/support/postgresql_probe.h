// PostgresqlProbe: the tests' own view of the throwaway PostgreSQL server,
// through libpq directly.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "auditpipe/sink/url.h"

namespace testing_support {

// The server the tests use (scripts/postgres.sh, started by scripts/test.sh);
// AUDITPIPE_TEST_POSTGRES_URL overrides the build's default.
inline std::string postgresql_test_url() {
  const char* url = std::getenv("AUDITPIPE_TEST_POSTGRES_URL");
  return url && *url ? url : AUDITPIPE_DEFAULT_POSTGRES_URL;
}

class PostgresqlProbe {
 public:
  PostgresqlProbe() {
    const auto u = auditpipe::parse_url(postgresql_test_url());
    const std::string conninfo =
        "host=" + u.hosts.at(0).host + " port=" + std::to_string(u.hosts[0].port.value_or(5432)) +
        " dbname=" + u.path + " user=" + u.user + " password=" + u.password.value_or("");
    conn_ = PQconnectdb(conninfo.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string e = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("test probe cannot connect to PostgreSQL: " + e);
    }
  }
  ~PostgresqlProbe() { PQfinish(conn_); }
  PostgresqlProbe(const PostgresqlProbe&) = delete;
  PostgresqlProbe& operator=(const PostgresqlProbe&) = delete;

  void exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      ADD_FAILURE() << "probe query failed: " << sql << ": " << PQresultErrorMessage(r);
    }
    PQclear(r);
  }

  // All rows, values as text (NULL as nullopt).
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql) {
    std::vector<std::vector<std::optional<std::string>>> out;
    PGresult* r = PQexec(conn_, sql.c_str());
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
      ADD_FAILURE() << "probe query failed: " << sql << ": " << PQresultErrorMessage(r);
      PQclear(r);
      return out;
    }
    for (int i = 0; i < PQntuples(r); ++i) {
      std::vector<std::optional<std::string>> row;
      for (int k = 0; k < PQnfields(r); ++k) {
        if (PQgetisnull(r, i, k)) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(
              std::string(PQgetvalue(r, i, k), static_cast<std::size_t>(PQgetlength(r, i, k))));
        }
      }
      out.push_back(std::move(row));
    }
    PQclear(r);
    return out;
  }

  long long scalar(const std::string& sql) {
    const auto r = rows(sql);
    if (r.empty() || r[0].empty() || !r[0][0]) return -1;
    return std::stoll(*r[0][0]);
  }

 private:
  PGconn* conn_ = nullptr;
};

}  // namespace testing_support
