#include "read_only_url.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "auditpipe/sink/url.h"

namespace auditpipe::ingest {

std::string read_only_url(const std::string& url) {
  constexpr std::string_view scheme = "sqlite:";
  const bool sqlite = url.size() >= scheme.size() &&
                      std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
                        return a == std::tolower(static_cast<unsigned char>(b));
                      });
  if (!sqlite) return url;
  const std::size_t q = url.find('?');
  if (q != std::string::npos) {
    for (const auto& [k, v] : parse_query(std::string_view(url).substr(q + 1))) {
      if (k == "read_only") return url;
    }
  }
  return url + (q == std::string::npos ? "?" : "&") + "read_only=1";
}

}  // namespace auditpipe::ingest
