#include "mysql_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "auditpipe/status.h"

namespace auditpipe::mysql {

namespace {

[[noreturn]] void bad(const Url& url, const std::string& why) {
  throw url_error(url.masked("auditpipe: bad MySQL URL '" + url.redacted() + "': " + why));
}

bool boolean(const Url& url, const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  bad(url, "option " + key + "='" + value + "' must be true or false");
}

}  // namespace

std::string MysqlEndpoint::describe() const {
  if (!socket.empty()) return "socket " + socket;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

MysqlConfig parse_mysql_url(std::string_view text) {
  MysqlConfig c;
  const Url url = with_accepted_form(
      text,
      [&] {
        return parse_sink_url(
            text, url_schemes,
            {"write_path", "create_table", "migrate", "charset", "connect_timeout", "read_timeout",
             "write_timeout", "tls", "tls_ca", "tls_cert", "tls_key", "socket", "hosts", "seal",
             "seal_key_file", "seal_anchor_file", "password_file"},
            pool_option_names);
      },
      "mysql://user:password@host:port[,host2:port2]/database?option=value (or mariadb://)");
  c.sink.redacted_url = url.redacted();
  c.user = url.user;
  c.password = url.password.value_or("");
  c.database = url.path;
  if (c.user.empty()) bad(url, "no user name (mysql://user:password@host/database)");
  if (c.database.empty()) bad(url, "no database name after the host");
  if (c.database.find('/') != std::string::npos) bad(url, "the database name contains '/'");
  if (url.hosts.empty()) bad(url, "no host");
  const std::string socket = url.option("socket").value_or("");
  for (const auto& h : url.hosts) {
    MysqlEndpoint e;
    if (!h.host.empty() && h.host.front() == '/') {
      e.socket = h.host;
    } else {
      e.host = h.host;
      e.port = h.port.value_or(3306);
      if (!socket.empty() && e.host == "localhost") e.socket = socket;
    }
    c.endpoints.push_back(e);
  }
  c.sink.table_location = url.masked("in database " + c.database + " on " + c.sink.redacted_url);
  c.sink.pool.name = c.sink.redacted_url;
  for (const auto& [key, value] : url.query) {
    if (key == "write_path") {
      c.write_path = static_cast<WritePath>(url_choice(url, key, value, write_path_names));
    } else if (key == "password_file") {
      c.password = password_from_file(url, value);
    } else if (key == "create_table") {
      c.sink.create_table = boolean(url, key, value);
    } else if (key == "migrate") {
      c.sink.migrate_add_columns = url_choice(url, key, value, migrate_names) == 1;
    } else if (key == "charset") {
      // The sink sends UTF-8 (fixed_string text, cut at UTF-8 boundaries):
      // with any other connection charset the server re-encodes it, and
      // latin1 stores an emoji F09F9880 as C3B0C5B8CB9CE282AC without a
      // warning; utf8mb3 refuses 4-byte characters. Only utf8mb4 stores
      // the bytes exactly.
      std::string lower(value);
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower != "utf8mb4") {
        bad(url, "charset=" + value +
                     " would make the server convert the UTF-8 text the sink writes (non-ASCII "
                     "text stored wrong or refused); the sink writes utf8mb4: leave charset out "
                     "or give charset=utf8mb4");
      }
    } else if (key == "connect_timeout") {
      c.connect_timeout_s = static_cast<unsigned>(url_number(url, key, value, 1, 3600));
    } else if (key == "read_timeout") {
      c.read_timeout_s = static_cast<unsigned>(url_number(url, key, value, 1, 86400));
    } else if (key == "write_timeout") {
      c.write_timeout_s = static_cast<unsigned>(url_number(url, key, value, 1, 86400));
    } else if (key == "tls") {
      c.tls = static_cast<TlsMode>(url_choice(url, key, value, tls_mode_names));
    } else if (key == "hosts") {
      c.hosts = static_cast<HostSelection>(url_choice(url, key, value, host_selection_names));
    } else if (key == "tls_ca") {
      c.tls_ca = value;
    } else if (key == "tls_cert") {
      c.tls_cert = value;
    } else if (key == "tls_key") {
      c.tls_key = value;
    } else if (seal::is_url_option(key)) {
      // seal=, seal_key_file=, seal_anchor_file=: the skeleton's
      if (const auto why = seal::apply_url_option(c.sink.seal, key, value)) bad(url, *why);
    } else {
      apply_pool_option(url, key, value, c.sink.pool, c.sink.pool_size);
    }
  }
  check_pool_options(url, c.sink.pool, c.sink.pool_size);
  if (const auto why = seal::contradiction(c.sink.seal, c.sink.migrate_add_columns)) bad(url, *why);
  if ((c.tls == TlsMode::verify_ca || c.tls == TlsMode::verify_identity) && c.tls_ca.empty()) {
    bad(url,
        "tls=" + std::string(tls_mode_names[static_cast<int>(c.tls)]) + " needs tls_ca=<file>");
  }
  // Options that would do nothing: whoever gave them believes they do.
  if (c.tls == TlsMode::disabled) {
    for (const char* file : {"tls_ca", "tls_cert", "tls_key"}) {
      if (url.option(file)) {
        bad(url, std::string(file) +
                     " is given but TLS is off (tls=disabled, the default): add "
                     "tls=verify_identity (or verify_ca, required), or drop " +
                     file);
      }
    }
  }
  if (!socket.empty() &&
      std::none_of(c.endpoints.begin(), c.endpoints.end(),
                   [](const MysqlEndpoint& e) { return !e.socket.empty() && !e.host.empty(); })) {
    bad(url,
        "socket= is used only for the host localhost (127.0.0.1 and other hosts are reached "
        "over TCP): write localhost as the host, or drop socket=");
  }
  return c;
}

}  // namespace auditpipe::mysql
