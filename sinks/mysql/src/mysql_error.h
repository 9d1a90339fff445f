// What went wrong on a MySQL connection, and what kind of failure it is.
#pragma once

#include <string>

namespace auditpipe::mysql {

struct MysqlError {
  unsigned code = 0;
  std::string sqlstate;
  std::string message;

  std::string describe() const;  // "(1406, 22001) Data too long for column ..."
};

// The connection is gone or unusable: close it, and retry the batch on
// another one (it may or may not have been applied: writes are idempotent).
bool is_connection_error(unsigned code) noexcept;

// A connect that failed without any server answering it (refused, timed
// out, no route, a host name that does not resolve, a server that accepted
// the socket but never sent its greeting), or a server that answered only
// that it cannot take a connection now (too many, shutting down): nothing
// is known of the configuration yet, so open() throws auditpipe::unreachable.
bool is_unreachable_error(unsigned code) noexcept;

// The server refuses the data itself (a value the column cannot hold, a
// constraint): retrying the same rows cannot succeed.
bool is_data_error(unsigned code) noexcept;

// 1213: a deadlock, or a Galera certification failure; retried, counted.
bool is_certification_conflict(unsigned code) noexcept;

// The server refuses the writes as configured (a missing privilege, a
// dropped table or column, a locked account): no retry can succeed until
// that changes. The table is in mysql_error.cpp, one entry per code.
bool is_configuration_error(unsigned code) noexcept;

}  // namespace auditpipe::mysql
