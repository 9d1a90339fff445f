// MysqlError and the sorting of MySQL error codes (mysql_error.h).
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
    // Galera: the node is alive but cannot take writes. 1047 (08S01)
    // "WSREP has not yet prepared node for application use" once it is
    // outside the primary component (or joining); 1180 "Got error 6 'Not
    // connected to Primary Component' during COMMIT" for the commit that
    // was in flight when it left. Another node may take the batch: the
    // connection is closed and the next connect moves on (HostHealth).
    case ER_UNKNOWN_COM_ERROR:
    case ER_ERROR_DURING_COMMIT:
      return true;
    default:
      return false;
  }
}

bool is_unreachable_error(unsigned code) noexcept {
  switch (code) {
    case CR_CONNECTION_ERROR:      // 2002: no server at the unix socket
    case CR_CONN_HOST_ERROR:       // 2003: refused, timed out, no route to the host
    case CR_UNKNOWN_HOST:          // 2005: the name does not resolve (now: DNS may be starting)
    case CR_SERVER_GONE_ERROR:     // 2006
    case CR_SERVER_LOST:           // 2013: connected, but no greeting (a hung server)
    case CR_SERVER_LOST_EXTENDED:  // 2055: the same, with the system error
    case ER_CON_COUNT_ERROR:       // 1040: too many connections, before any authentication
    case ER_SERVER_SHUTDOWN:       // 1053: shutting down
      return true;
    default:
      return false;
  }
}

// Server errors no retry mends until someone changes the server's
// configuration, the grants or the table: the batch waits (WriteResult::
// permanent, retried at the slowest backoff, health down) instead of being
// rejected, so nothing is lost once the cause is fixed. Codes and meanings
// as in MariaDB's mysqld_error.h / error reference.
struct ConfigurationError {
  unsigned code;
  const char* why;  // documentation of the entry, not shown to users
};
constexpr ConfigurationError configuration_errors[] = {
    {ER_OPEN_AS_READONLY, "1036 the table is read only"},
    {ER_DBACCESS_DENIED_ERROR, "1044 the user may not use the database"},
    {ER_ACCESS_DENIED_ERROR, "1045 wrong user name or password"},
    {ER_BAD_DB_ERROR, "1049 the database does not exist (dropped)"},
    {ER_BAD_FIELD_ERROR, "1054 a column of the insert is gone from the table"},
    {ER_HOST_NOT_PRIVILEGED, "1130 this host may not connect as the user"},
    {ER_WRONG_VALUE_COUNT_ON_ROW, "1136 the table's columns changed under the insert"},
    {ER_TABLEACCESS_DENIED_ERROR, "1142 INSERT (or UPDATE, for the duplicate clause) denied"},
    {ER_COLUMNACCESS_DENIED_ERROR, "1143 a column-level privilege is missing"},
    {ER_NO_SUCH_TABLE, "1146 the table was dropped or renamed"},
    {ER_NOT_ALLOWED_COMMAND, "1148 the server refuses LOAD DATA LOCAL (local_infile=0)"},
    {ER_SPECIFIC_ACCESS_DENIED_ERROR, "1227 a global privilege is missing"},
    {ER_NO_DEFAULT_FOR_FIELD, "1364 the table gained a NOT NULL column without a default"},
    {ER_MUST_CHANGE_PASSWORD, "1820 the account's password expired"},
    {ER_ACCOUNT_HAS_BEEN_LOCKED, "4151 the account is locked"},
};

bool is_certification_conflict(unsigned code) noexcept {
  // 1213 ER_LOCK_DEADLOCK: a real deadlock, or on Galera a write set that
  // lost certification against another node's. Nothing was committed: the
  // same batch is retried (WriteFailure::Kind::other).
  return code == ER_LOCK_DEADLOCK;
}

bool is_configuration_error(unsigned code) noexcept {
  for (const ConfigurationError& e : configuration_errors) {
    if (e.code == code) return true;
  }
  return false;
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
