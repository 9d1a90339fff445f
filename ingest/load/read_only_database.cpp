#include "read_only_database.h"

#include <string_view>
#include <utility>
#include <vector>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

namespace auditpipe::ingest {

bool is_sqlite_url(const std::string& url) {
  return has_scheme(url, "sqlite");
}

namespace {

// A message about the URL as the user wrote it: without the option added
// here, nor the hint that names it.
std::string as_given(std::string message, const std::string& added) {
  for (const std::string_view cut :
       {std::string_view(added), std::string_view(" (read_only=1 opens an existing file)")}) {
    for (std::size_t at; (at = message.find(cut)) != std::string::npos;)
      message.erase(at, cut.size());
  }
  return message;
}

}  // namespace

std::unique_ptr<Database> connect_read_only(const std::string& url) {
  if (!is_sqlite_url(url)) return Database::connect(url);
  const std::size_t q = url.find('?');
  if (q != std::string::npos) {
    std::vector<std::pair<std::string, std::string>> options;
    try {
      options = parse_query(std::string_view(url).substr(q + 1));
    } catch (const std::exception&) {
      // The sink's parser says what is wrong, with the URL: it refuses the
      // URL before opening any file.
      return Database::connect(url);
    }
    for (const auto& [k, v] : options) {
      if (k == "read_only") return Database::connect(url);
    }
  }
  const std::string added = std::string(q == std::string::npos ? "?" : "&") + "read_only=1";
  try {
    return Database::connect(url + added);
  } catch (const url_error& e) {
    throw url_error(as_given(e.what(), added));
  } catch (const unreachable&) {
    throw;
  } catch (const error& e) {
    throw error(as_given(e.what(), added));
  }
}

}  // namespace auditpipe::ingest
