#include "durable/destination_mark.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "auditpipe/diagnostics.h"

namespace auditpipe::internal {

void check_destination_mark(const std::filesystem::path& mark, std::string_view destination,
                            std::uint64_t waiting, std::string_view what) {
  // Options (pool sizes, write paths) change without changing the database.
  const std::string_view where = destination.substr(0, destination.find('?'));
  std::string before;
  if (std::ifstream in(mark); in) {
    before.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (before == where) return;
  if (waiting > 0 && !before.empty()) {
    diagnostics()->warn(
        "auditpipe: {} holds {} records kept for {}; they are written to {} now (a spill "
        "directory or pool file belongs to one database: give each logger its own)",
        what, waiting, before, where);
  }
  const std::filesystem::path next = mark.string() + ".new";
  {
    std::ofstream out(next, std::ios::trunc);
    out << where;
    if (!out.flush()) return;
  }
  std::error_code ec;
  std::filesystem::rename(next, mark, ec);
  if (ec) std::filesystem::remove(next, ec);
}

}  // namespace auditpipe::internal
