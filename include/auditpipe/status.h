// Results of the producer-side calls and the library's exception type.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "auditpipe/export.h"

namespace auditpipe {

/// What happened to one record offered by a producer.
enum class Status {
  ok,              ///< committed: it will be written or reported by close()
  timed_out,       ///< Overflow::block: no slot freed up within max_wait
  dropped,         ///< Overflow::drop: the pool was full
  pool_exhausted,  ///< Overflow::fail: the pool was full
  closed,          ///< the logger is closed or closing
  empty_handle,    ///< commit() of a handle that holds no record
  /// DynamicLogger::Record::commit(): a setter named a column out of range
  /// or of another type, or set_null() a column that is not nullable (a
  /// programming error); the record was given back unwritten, counted as
  /// abandoned.
  wrong_setter,
};

/// The status's name, for messages.
AUDITPIPE_EXPORT std::string_view to_string(Status status) noexcept;

/// Thrown for errors found when a logger or sink is set up: a malformed URL,
/// an unreachable database, a table whose columns do not match. Never thrown
/// on the producer path.
class AUDITPIPE_EXPORT error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The database could not be reached at all (refused, timed out, no route):
/// nothing is known about its configuration yet. A logger whose records have
/// somewhere to wait (a spill directory or a durable pool, or
/// Options::start_while_unreachable) starts anyway and connects later; any
/// other error (wrong credentials, an unknown database, a table of the wrong
/// shape) is thrown as plain `error`, a URL at fault by itself as `url_error`.
class AUDITPIPE_EXPORT unreachable : public error {
 public:
  using error::error;
};

/// The URL itself is wrong, found before any connection is tried: malformed,
/// a scheme this build has no sink for, an unknown option or a value an
/// option cannot take. The command-line tool reports it as a usage error
/// (exit status 2).
class AUDITPIPE_EXPORT url_error : public error {
 public:
  using error::error;
};

}  // namespace auditpipe
