// auditpipe::source_location: std::source_location where the standard
// library has it, and the same interface from compiler builtins where it
// does not (clang 14 with libstdc++ 12, for one), so the public headers
// compile with both of Debian 12's compilers.
#pragma once

#include <cstdint>
#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>

#include "auditpipe/export.h"
namespace auditpipe {
using source_location = std::source_location;
}  // namespace auditpipe
#else
namespace auditpipe {
/// std::source_location where the library lacks it (GCC builtins).
class AUDITPIPE_EXPORT source_location {
 public:
  /// The caller's location.
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE()) noexcept {
    source_location l;
    l.file_ = file;
    l.function_ = function;
    l.line_ = line;
    return l;
  }
  /// The source file.
  constexpr const char* file_name() const noexcept { return file_; }
  /// The function.
  constexpr const char* function_name() const noexcept { return function_; }
  /// The line.
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  /// Always 0 (not known).
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
}  // namespace auditpipe
#endif
