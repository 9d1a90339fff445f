// Names of enumerators, for messages and reports.
#include "auditpipe/column.h"
#include "auditpipe/options.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"

namespace auditpipe {

std::string_view to_string(ColumnType type) noexcept {
  switch (type) {
    case ColumnType::boolean:
      return "boolean";
    case ColumnType::int8:
      return "int8";
    case ColumnType::int16:
      return "int16";
    case ColumnType::int32:
      return "int32";
    case ColumnType::int64:
      return "int64";
    case ColumnType::uint8:
      return "uint8";
    case ColumnType::uint16:
      return "uint16";
    case ColumnType::uint32:
      return "uint32";
    case ColumnType::float64:
      return "float64";
    case ColumnType::timestamp:
      return "timestamp";
    case ColumnType::text:
      return "text";
  }
  return "unknown";
}

std::string_view to_string(Overflow overflow) noexcept {
  switch (overflow) {
    case Overflow::block:
      return "block";
    case Overflow::drop:
      return "drop";
    case Overflow::fail:
      return "fail";
    case Overflow::spill:
      return "spill";
  }
  return "unknown";
}

std::string_view to_string(Status status) noexcept {
  switch (status) {
    case Status::ok:
      return "ok";
    case Status::timed_out:
      return "timed_out";
    case Status::dropped:
      return "dropped";
    case Status::pool_exhausted:
      return "pool_exhausted";
    case Status::closed:
      return "closed";
    case Status::empty_handle:
      return "empty_handle";
    case Status::wrong_setter:
      return "wrong_setter";
  }
  return "unknown";
}

std::string_view to_string(Health health) noexcept {
  switch (health) {
    case Health::ok:
      return "ok";
    case Health::degraded:
      return "degraded";
    case Health::down:
      return "down";
  }
  return "unknown";
}

}  // namespace auditpipe
