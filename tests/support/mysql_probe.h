// MysqlProbe: the tests' own view of the throwaway MariaDB server, through
// the C API directly, so what a test sees does not depend on the code under
// test. Also a plain PooledConnection on a real server for pool tests.
#pragma once

#include <gtest/gtest.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "auditpipe/sink/connection_pool.h"
#include "auditpipe/sink/url.h"

namespace testing_support {

// The server the tests use (scripts/mariadb.sh, started by scripts/test.sh);
// AUDITPIPE_TEST_MYSQL_URL overrides the build's default.
inline std::string mysql_test_url() {
  const char* url = std::getenv("AUDITPIPE_TEST_MYSQL_URL");
  return url && *url ? url : AUDITPIPE_DEFAULT_MYSQL_URL;
}

// Where scripts/mariadb.sh keeps the server's files (socket, TLS CA).
inline std::string mariadb_dir() {
  const char* dir = std::getenv("AUDITPIPE_MARIADB_DIR");
  return dir && *dir ? dir : AUDITPIPE_DEFAULT_MARIADB_DIR;
}

// The test URL with extra query options appended.
inline std::string mysql_url_with(const std::string& options) {
  const std::string base = mysql_test_url();
  if (options.empty()) return base;
  return base + (base.find('?') == std::string::npos ? "?" : "&") + options;
}

class MysqlProbe {
 public:
  MysqlProbe() : MysqlProbe(auditpipe::parse_url(mysql_test_url())) {}
  explicit MysqlProbe(const auditpipe::Url& u) {
    mysql_ = mysql_init(nullptr);
    const auto& h = u.hosts.at(0);
    if (mysql_real_connect(mysql_, h.host.c_str(), u.user.c_str(), u.password.value_or("").c_str(),
                           u.path.c_str(), h.port.value_or(3306), nullptr, 0) == nullptr) {
      throw std::runtime_error(std::string("test probe cannot connect: ") + mysql_error(mysql_));
    }
    mysql_set_character_set(mysql_, "utf8mb4");
  }
  ~MysqlProbe() { mysql_close(mysql_); }
  MysqlProbe(const MysqlProbe&) = delete;
  MysqlProbe& operator=(const MysqlProbe&) = delete;

  void exec(const std::string& sql) {
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
      ADD_FAILURE() << "probe query failed: " << sql << ": " << mysql_error(mysql_);
      return;
    }
    if (MYSQL_RES* r = mysql_store_result(mysql_)) mysql_free_result(r);
  }

  // Runs `sql` and returns the server's error number (0 on success), for
  // statements whose failure the caller expects and checks itself.
  unsigned exec_errno(const std::string& sql) {
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return mysql_errno(mysql_);
    if (MYSQL_RES* r = mysql_store_result(mysql_)) mysql_free_result(r);
    return 0;
  }

  // All rows, each value as raw bytes (NULL as nullopt).
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql) {
    std::vector<std::vector<std::optional<std::string>>> out;
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
      ADD_FAILURE() << "probe query failed: " << sql << ": " << mysql_error(mysql_);
      return out;
    }
    MYSQL_RES* r = mysql_store_result(mysql_);
    if (r == nullptr) return out;
    const unsigned n = mysql_num_fields(r);
    while (MYSQL_ROW row = mysql_fetch_row(r)) {
      const unsigned long* len = mysql_fetch_lengths(r);
      std::vector<std::optional<std::string>> values;
      for (unsigned i = 0; i < n; ++i) {
        if (row[i] == nullptr) {
          values.emplace_back(std::nullopt);
        } else {
          values.emplace_back(std::string(row[i], len[i]));
        }
      }
      out.push_back(std::move(values));
    }
    mysql_free_result(r);
    return out;
  }

  long long scalar(const std::string& sql) {
    const auto r = rows(sql);
    if (r.empty() || r[0].empty() || !r[0][0]) return -1;
    return std::stoll(*r[0][0]);
  }

  // Server-wide status counters.
  std::map<std::string, long long> global_status() {
    std::map<std::string, long long> out;
    for (const auto& r : rows("SHOW GLOBAL STATUS")) {
      if (r.size() == 2 && r[1]) {
        try {
          out[*r[0]] = std::stoll(*r[1]);
        } catch (...) {
        }
      }
    }
    return out;
  }

  MYSQL* handle() { return mysql_; }

 private:
  MYSQL* mysql_ = nullptr;
};

// A real connection to the test server, for ConnectionPool tests.
class RealConnection : public auditpipe::PooledConnection {
 public:
  explicit RealConnection(const std::string& url) {
    const auto u = auditpipe::parse_url(url);
    mysql_ = mysql_init(nullptr);
    const auto& h = u.hosts.at(0);
    if (mysql_real_connect(mysql_, h.host.c_str(), u.user.c_str(), u.password.value_or("").c_str(),
                           u.path.c_str(), h.port.value_or(3306), nullptr, 0) == nullptr) {
      const std::string e = mysql_error(mysql_);
      mysql_close(mysql_);
      throw std::runtime_error("connect failed: " + e);
    }
  }
  ~RealConnection() override { mysql_close(mysql_); }
  bool ping() noexcept override { return mysql_ping(mysql_) == 0; }
  unsigned long id() { return mysql_thread_id(mysql_); }

 private:
  MYSQL* mysql_ = nullptr;
};

}  // namespace testing_support
