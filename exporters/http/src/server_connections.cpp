// See server_connections.h.
#include "server_connections.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

namespace auditpipe::http {

namespace {

// The peer of `fd` if it is one of `server`'s connections.
std::optional<std::string> peer_of(int fd, const Listening& server) {
  int type = 0;
  socklen_t type_len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) {
    return std::nullopt;
  }
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof local, peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return std::nullopt;
  if (local.ss_family != (server.ipv6 ? AF_INET6 : AF_INET)) return std::nullopt;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return std::nullopt;
  char local_address[NI_MAXHOST] = {}, peer_address[NI_MAXHOST] = {};
  std::uint16_t local_port = 0, peer_port = 0;
  if (server.ipv6) {
    local_port = ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
    peer_port = ntohs(reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_port);
  } else {
    local_port = ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
    peer_port = ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port);
  }
  if (local_port != server.port) return std::nullopt;
  // Numeric, as cpp-httplib formats remote_addr (a link-local IPv6
  // address with its %scope).
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), local_len, local_address,
                    sizeof local_address, nullptr, 0, NI_NUMERICHOST) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&peer), peer_len, peer_address, sizeof peer_address,
                    nullptr, 0, NI_NUMERICHOST) != 0) {
    return std::nullopt;
  }
  const bool wildcard = server.address == "0.0.0.0" || server.address == "::";
  if (!wildcard) {
    in6_addr bound6{}, here6{};
    in_addr bound4{}, here4{};
    const bool same = server.ipv6 ? inet_pton(AF_INET6, server.address.c_str(), &bound6) == 1 &&
                                        inet_pton(AF_INET6, local_address, &here6) == 1 &&
                                        IN6_ARE_ADDR_EQUAL(&bound6, &here6)
                                  : inet_pton(AF_INET, server.address.c_str(), &bound4) == 1 &&
                                        inet_pton(AF_INET, local_address, &here4) == 1 &&
                                        bound4.s_addr == here4.s_addr;
    if (!same) return std::nullopt;
  }
  return peer_key(peer_address, peer_port);
}

}  // namespace

std::string peer_key(const std::string& address, int port) {
  return address + " " + std::to_string(port);
}

std::vector<Connection> connections_of(const Listening& server) {
  std::vector<Connection> out;
  DIR* fds = ::opendir("/proc/self/fd");
  if (!fds) return out;
  const int own = ::dirfd(fds);
  while (const dirent* entry = ::readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || fd == own) continue;
    if (auto peer = peer_of(static_cast<int>(fd), server)) {
      out.push_back({static_cast<int>(fd), std::move(*peer)});
    }
  }
  ::closedir(fds);
  return out;
}

void shut_down_reading(const Connection& c, const Listening& server) {
  const int dup = ::fcntl(c.fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return;  // closed since
  if (peer_of(dup, server) == c.peer) ::shutdown(dup, SHUT_RD);
  ::close(dup);
}

}  // namespace auditpipe::http
