// The benchmarks' own plain client connection to a MariaDB/MySQL URL's
// first host, for their set-up around the contenders (dropping and locking
// tables, counting rows). Not a contender itself.
#pragma once

#include <auditpipe/sink/url.h>
#include <mysql.h>

#include <cstdio>
#include <cstdlib>

namespace bench {

// Connected, or the program exits with the server's message.
inline MYSQL* connect_admin(const auditpipe::Url& u, const char* program) {
  MYSQL* m = mysql_init(nullptr);
  const auto& h = u.hosts.at(0);
  if (mysql_real_connect(m, h.host.c_str(), u.user.c_str(), u.password.value_or("").c_str(),
                         u.path.c_str(), h.port.value_or(3306), nullptr, 0) == nullptr) {
    std::fprintf(stderr, "%s: cannot connect: %s\n", program, mysql_error(m));
    std::exit(1);
  }
  return m;
}

}  // namespace bench
