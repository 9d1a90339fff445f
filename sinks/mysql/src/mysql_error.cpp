#include "mysql_error.h"

#include <errmsg.h>
#include <mysqld_error.h>

namespace auditpipe::mysql {

std::string MysqlError::describe() const {
  std::string out = "(" + std::to_string(code);
  if (!sqlstate.empty() && sqlstate != "00000") out += ", " + sqlstate;
  return out + ") " + message;
}

bool is_connection_error(unsigned code) noexcept {
  // Client-side errors (2000-2999: connection refused, server gone, lost
  // during query, packet too large...) and server-side terminations.
  if (code >= CR_MIN_ERROR && code <= CR_MAX_ERROR) return true;
  switch (code) {
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
    case ER_NET_READ_ERROR:
    case ER_NET_READ_INTERRUPTED:
    case ER_NET_ERROR_ON_WRITE:
    case ER_NET_WRITE_INTERRUPTED:
    case ER_NET_PACKET_TOO_LARGE:
    case ER_UNKNOWN_STMT_HANDLER:
      return true;
    default:
      return false;
  }
}

bool is_data_error(unsigned code) noexcept {
  switch (code) {
    case ER_DATA_TOO_LONG:
    case ER_TRUNCATED_WRONG_VALUE_FOR_FIELD:
    case ER_TRUNCATED_WRONG_VALUE:
    case ER_WARN_DATA_OUT_OF_RANGE:
    case ER_WARN_NULL_TO_NOTNULL:
    case ER_BAD_NULL_ERROR:
    case ER_DUP_ENTRY:  // on a unique key other than (source_id, seq)
    case ER_NO_REFERENCED_ROW:
    case ER_NO_REFERENCED_ROW_2:
    case ER_CONSTRAINT_FAILED:
    case ER_INVALID_CHARACTER_STRING:
    case ER_DIVISION_BY_ZERO:
    case ER_WRONG_VALUE_FOR_TYPE:
    case ER_DATETIME_FUNCTION_OVERFLOW:
    case ER_WRONG_VALUE:
      return true;
    default:
      return false;
  }
}

}  // namespace auditpipe::mysql
