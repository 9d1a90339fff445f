#include "auditpipe/open_sink.h"

#include <string>

#include "auditpipe/sink/url.h"
#include "auditpipe/status.h"

#ifdef AUDITPIPE_HAVE_SOCI
#include "auditpipe/soci/sqlite_sink.h"
#endif
#ifdef AUDITPIPE_HAVE_POSTGRESQL
#include "auditpipe/soci/postgresql_sink.h"
#endif
#ifdef AUDITPIPE_HAVE_MYSQL
#include "auditpipe/mysql/mysql_sink.h"
#endif

namespace auditpipe {

namespace {
bool has_scheme(std::string_view url, std::string_view scheme) {
  if (url.size() <= scheme.size() || url[scheme.size()] != ':') return false;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
  }
  return true;
}
}  // namespace

std::shared_ptr<Sink> open_sink(std::string_view url) {
#ifdef AUDITPIPE_HAVE_SOCI
  if (has_scheme(url, "sqlite")) return soci_sink::open_sqlite(url);
#endif
#ifdef AUDITPIPE_HAVE_POSTGRESQL
  if (has_scheme(url, "postgresql") || has_scheme(url, "postgres"))
    return soci_sink::open_postgresql(url);
#endif
#ifdef AUDITPIPE_HAVE_MYSQL
  if (has_scheme(url, "mysql") || has_scheme(url, "mariadb")) return mysql::open(url);
#endif
  std::string supported;
#ifdef AUDITPIPE_HAVE_SOCI
  supported += " sqlite://";
#endif
#ifdef AUDITPIPE_HAVE_MYSQL
  supported += " mysql://";
#endif
#ifdef AUDITPIPE_HAVE_POSTGRESQL
  supported += " postgresql://";
#endif
  throw error("auditpipe: no sink for '" + redact_url(url) +
              "' in this build (supported:" + supported + ")");
}

}  // namespace auditpipe
