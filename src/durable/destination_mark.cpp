#include "durable/destination_mark.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "auditpipe/diagnostics.h"

namespace auditpipe::internal {

namespace {

// The database a sink's describe() names, spelt one way: its scheme's
// other name (mariadb://, postgres://) and the password's mask (present
// only when the URL holds the password, not with password_file=) dropped,
// and of its options only those that say where the server is. Pool
// sizes, write paths and the like change without changing the database.
std::string database_of(std::string_view described) {
  const std::size_t question = described.find('?');
  std::string_view head = described.substr(0, question);
  std::string out;
  const std::size_t colon = head.find("://");
  if (colon != std::string_view::npos) {
    const std::string_view scheme = head.substr(0, colon);
    out = scheme == "mariadb" ? "mysql" : scheme == "postgres" ? "postgresql" : std::string(scheme);
    head.remove_prefix(colon);
  }
  if (const std::size_t mask = head.find(":***@"); mask != std::string_view::npos) {
    out.append(head.substr(0, mask));
    head.remove_prefix(mask + 4);
  }
  out.append(head);
  if (question == std::string_view::npos) return out;
  std::string_view query = described.substr(question + 1);
  char separator = '?';
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view option = query.substr(0, amp);
    const std::string_view key = option.substr(0, option.find('='));
    if (key == "host" || key == "port" || key == "socket") {
      out += separator;
      out.append(option);
      separator = '&';
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace

void check_destination_mark(const std::filesystem::path& mark, std::string_view destination,
                            std::uint64_t waiting, std::string_view what) {
  const std::string where = database_of(destination);
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
  // Not written (a full disk, a read-only directory), it cannot serve the
  // next start's warning: said once here, and let go.
  const auto not_recorded = [&](const std::string& why) {
    diagnostics()->warn(
        "auditpipe: cannot record in {} which database {} keeps records for ({}): a later "
        "logger given them for another database will not be warned",
        mark.string(), what, why);
  };
  const std::filesystem::path next = mark.string() + ".new";
  {
    std::ofstream out(next, std::ios::trunc);
    out << where;
    if (!out.flush()) {
      const int error = errno;
      out.close();
      std::error_code ec;
      std::filesystem::remove(next, ec);
      not_recorded(std::strerror(error));
      return;
    }
    out.close();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(next, ec);
      not_recorded("its last bytes could not be written");
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(next, mark, ec);
  if (ec) {
    not_recorded(ec.message());
    std::filesystem::remove(next, ec);
  }
}

}  // namespace auditpipe::internal
