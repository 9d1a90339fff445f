// The connections a MetricsServer accepted, found among this process's file
// descriptors (cpp-httplib offers no handle on its accepted sockets): TCP
// sockets whose local end is the server's address and port (the port is
// the server's alone: no SO_REUSEPORT), each named by its peer as
// cpp-httplib's Request names it ("address port").
//
// Who may call: metrics_server.cpp. Thread safety: any thread; what is
// found may be closed (and its number reused) by cpp-httplib's threads at
// any time, which shut_down_reading() checks for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace auditpipe::http {

/// Where a server listens.
struct Listening {
  std::uint16_t port = 0;
  bool ipv6 = false;
  std::string address;  ///< as bound; "0.0.0.0" and "::" take every local address
};

struct Connection {
  int fd = -1;
  std::string peer;  ///< peer_key() of its client end
};

/// "address port", as cpp-httplib's Request has remote_addr and remote_port.
std::string peer_key(const std::string& address, int port);

/// The server's connections now.
std::vector<Connection> connections_of(const Listening& server);

/// Shuts `c` down for reading, if its number still is that connection: it is
/// checked on a duplicate of the number, so that one cpp-httplib closed
/// since (and the process reused for another socket) is left alone.
void shut_down_reading(const Connection& c, const Listening& server);

}  // namespace auditpipe::http
