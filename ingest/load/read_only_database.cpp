#include "read_only_database.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe::ingest {

bool is_sqlite_url(const std::string& url) {
  constexpr std::string_view scheme = "sqlite:";
  return url.size() >= scheme.size() &&
         std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
           return a == std::tolower(static_cast<unsigned char>(b));
         });
}

std::unique_ptr<Database> connect_read_only(const std::string& url) {
  if (!is_sqlite_url(url)) return Database::connect(url);
  const std::size_t q = url.find('?');
  if (q != std::string::npos) {
    for (const auto& [k, v] : parse_query(std::string_view(url).substr(q + 1))) {
      if (k == "read_only") return Database::connect(url);
    }
  }
  const std::string added = std::string(q == std::string::npos ? "?" : "&") + "read_only=1";
  try {
    return Database::connect(url + added);
  } catch (const url_error& e) {
    // The URL as the user wrote it, in the message too.
    std::string message = e.what();
    for (std::size_t at; (at = message.find(added)) != std::string::npos;)
      message.erase(at, added.size());
    throw url_error(message);
  }
}

}  // namespace auditpipe::ingest
