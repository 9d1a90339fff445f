// PostgresqlProbe: the tests' own view of the throwaway PostgreSQL server,
// through libpq directly.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cctype>
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

// A URL component with every byte but letters and digits percent-encoded,
// so that spaces, quotes and backslashes reach the sink as they are.
inline std::string percent_encoded(const std::string& s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch)) {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

class PostgresqlProbe {
 public:
  // As the test user of postgresql_test_url().
  PostgresqlProbe() {
    const auto u = auditpipe::parse_url(postgresql_test_url());
    connect({"host", "port", "dbname", "user", "password"},
            {u.hosts.at(0).host, std::to_string(u.hosts[0].port.value_or(5432)), u.path, u.user,
             u.password.value_or("")});
  }

  // As the user of `u` (its first host), on any server.
  explicit PostgresqlProbe(const auditpipe::Url& u) {
    connect({"host", "port", "dbname", "user", "password"},
            {u.hosts.at(0).host, std::to_string(u.hosts[0].port.value_or(5432)), u.path, u.user,
             u.password.value_or("")});
  }

  // As the server's superuser `postgres`, which scripts/postgres.sh lets in
  // without a password over the Unix socket in its directory
  // (AUDITPIPE_POSTGRES_DIR): for what the test user may not do, such as
  // creating roles and databases or revoking privileges.
  struct Admin {};
  explicit PostgresqlProbe(Admin) {
    const auto u = auditpipe::parse_url(postgresql_test_url());
    const char* dir = std::getenv("AUDITPIPE_POSTGRES_DIR");
    connect({"host", "port", "dbname", "user"},
            {dir && *dir ? dir : AUDITPIPE_SOURCE_DIR "/build/postgres",
             std::to_string(u.hosts.at(0).port.value_or(5432)), u.path, "postgres"});
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
  // From keywords and values, so that no value needs quoting.
  void connect(const std::vector<std::string>& keywords, const std::vector<std::string>& values) {
    std::vector<const char*> k, v;
    for (std::size_t i = 0; i < keywords.size(); ++i) {
      k.push_back(keywords[i].c_str());
      v.push_back(values[i].c_str());
    }
    k.push_back(nullptr);
    v.push_back(nullptr);
    conn_ = PQconnectdbParams(k.data(), v.data(), 0);
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string e = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("test probe cannot connect to PostgreSQL: " + e);
    }
  }

  PGconn* conn_ = nullptr;
};

}  // namespace testing_support
