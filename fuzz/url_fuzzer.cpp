// libFuzzer target: the URL parser and the MySQL sink's URL options, on
// arbitrary bytes. Malformed input must end in auditpipe::error, nothing
// else; a parsed URL must redact to text that hides its password.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "../sinks/mysql/src/mysql_config.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auditpipe::Url url = auditpipe::parse_url(text);
    const std::string shown = url.redacted();
    if (url.password && !url.password->empty() && shown.find(":***@") == std::string::npos) {
      std::abort();  // a password that the redacted form does not mask
    }
  } catch (const auditpipe::error&) {
  }
  try {
    (void)auditpipe::mysql::parse_mysql_url(text);
  } catch (const auditpipe::error&) {
  }
  (void)auditpipe::redact_url(text);
  return 0;
}
