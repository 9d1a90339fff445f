// libFuzzer target: the URL parser and the MySQL sink's URL options, on
// arbitrary bytes. Malformed input must end in auditpipe::error, nothing
// else; a parsed URL must redact to text that hides its password.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "../sinks/mysql/src/mysql_config.h"
#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace {

// A message shows `password` (one the parser identified) where it stands
// alone: masking it again would change the message. (Inside a longer word
// it is not shown: a password "m" leaves "mysql" whole.) A password made of
// or holding '*' can be rebuilt from the "***" masks themselves.
void check_hidden(const std::string& message, const std::optional<std::string>& password) {
  if (!password || password->empty() || password->find('*') != std::string::npos) return;
  if (auditpipe::hide_secret(message, *password) != message) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<std::string> password;
  try {
    const auditpipe::Url url = auditpipe::parse_url(text);
    password = url.password;
    const std::string shown = url.redacted();
    // Every occurrence of the password that stands alone is masked (it may
    // equal the user, a host, or URL syntax such as ":"), which can take the
    // "***" mask's own neighbours with it: what must hold is that it is not
    // shown.
    check_hidden(shown, password);
  } catch (const auditpipe::error& e) {
    (void)e;
  }
  try {
    (void)auditpipe::mysql::parse_mysql_url(text);
  } catch (const auditpipe::error& e) {
    check_hidden(e.what(), password);  // no message quotes the password it parsed
  }
  check_hidden(auditpipe::redact_url(text), password);
  return 0;
}
