// MysqlConfig: everything the MySQL sink takes from its URL.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/mysql/mysql_sink.h"
#include "auditpipe/sink/sql_sink.h"
#include "auditpipe/sink/url.h"

namespace auditpipe::mysql {

// The URL's names of the write paths and TLS modes, in enum order.
inline constexpr std::string_view write_path_names[] = {"auto", "bulk", "text", "load_data"};
enum class TlsMode { disabled, required, verify_ca, verify_identity };
inline constexpr std::string_view tls_mode_names[] = {"disabled", "required", "verify_ca",
                                                      "verify_identity"};
// URL option hosts=: how connections pick a host of the list.
//   sequential: the first healthy host in the URL's order (every writer on
//     one node: on Galera, certification conflicts between the sink's own
//     writers cannot occur);
//   loadbalance: each new connection starts one host further (writers
//     spread across the nodes).
enum class HostSelection { sequential, loadbalance };
inline constexpr std::string_view host_selection_names[] = {"sequential", "loadbalance"};

struct MysqlEndpoint {
  std::string host;  // empty with a socket
  unsigned port = 3306;
  std::string socket;  // unix socket path, or empty
  std::string describe() const;
};

struct MysqlConfig {
  SqlSinkSettings sink;  // redacted URL, create_table, the pool's options
  std::string user;
  std::string password;
  std::string database;
  std::vector<MysqlEndpoint> endpoints;  // failover order
  WritePath write_path = WritePath::automatic;
  // The connection charset: always utf8mb4, what the sink writes (the
  // charset option takes only that).
  std::string charset = "utf8mb4";
  unsigned connect_timeout_s = 10;
  unsigned read_timeout_s = 60;
  unsigned write_timeout_s = 60;
  TlsMode tls = TlsMode::disabled;
  HostSelection hosts = HostSelection::sequential;
  std::string tls_ca, tls_cert, tls_key;

  // `text` (a server's message may echo the user or host name, which the
  // password may equal) with the password masked.
  std::string hide_password(std::string text) const {
    return hide_secret(std::move(text), password);
  }
};

// Throws auditpipe::error naming the problem (password masked).
MysqlConfig parse_mysql_url(std::string_view url);

}  // namespace auditpipe::mysql
