// pg_attrs_probe: the program tests/cluster/pg_session_attrs.sh runs against
// the PostgreSQL primary + standby pair, to see what an application sees
// when a URL names a standby: whether a reader connects, whether a logger
// starts, and whether its records get written.
//
//   pg_attrs_probe read <url>           auditpipe::Database::connect (what
//                                       `auditpipe verify` reads through),
//                                       prints pg_is_in_recovery()
//   pg_attrs_probe exec <url> <sql>     one statement through Database
//   pg_attrs_probe count <url>          rows of audit_log
//   pg_attrs_probe write <url> <records> <close seconds> <start_while_unreachable 0|1>
//                                       a Logger<AuditRow> on audit_log: prints
//                                       its health after construction, logs the
//                                       records, closes with the deadline,
//                                       prints what was written
//
// Exit: 0 success (write: every record written); 1 a failure; 3 the
// connect or the Logger's constructor threw auditpipe::unreachable; 4 it
// threw another auditpipe::error. What was thrown is printed with its type.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "audit_row.h"
#include "auditpipe/database.h"
#include "auditpipe/logger.h"
#include "auditpipe/open.h"
#include "auditpipe/status.h"

namespace {

std::string servers_of(const auditpipe::Stats& s) {
  if (!s.connection_pool) return "-";
  std::string out;
  for (const std::string& server : s.connection_pool->servers)
    out += (out.empty() ? "" : ",") + server;
  return out.empty() ? "none" : out;
}

int write(const std::string& url, long records, double close_s, bool start_while_unreachable) {
  auditpipe::Options o;
  o.batch_size = 100;
  o.writers = 2;
  o.retry_backoff_max = std::chrono::milliseconds(500);
  o.start_while_unreachable = start_while_unreachable;
  auditpipe::Logger<testing_support::AuditRow> logger(auditpipe::open(url), o);
  const auditpipe::Stats first = logger.stats();
  std::printf("constructed: health=%s reason=%s\n", std::string(to_string(first.health)).c_str(),
              first.health_reason.c_str());
  long ok = 0;
  for (long i = 0; i < records; ++i) {
    auto r = logger.acquire();
    if (!r) continue;
    r->message_id = i;
    r->sender = "pg_attrs_probe";
    r->payload = "session attrs test";
    if (r.commit() == auditpipe::Status::ok) ++ok;
  }
  const auditpipe::CloseReport report =
      logger.close(std::chrono::milliseconds(static_cast<long long>(close_s * 1000)));
  const auditpipe::Stats& s = report.stats;
  std::printf(
      "closed: committed=%ld written=%llu unwritten=%llu drained=%d health=%s servers=%s "
      "reason=%s\n",
      ok, static_cast<unsigned long long>(s.written),
      static_cast<unsigned long long>(report.unwritten), report.drained ? 1 : 0,
      std::string(to_string(s.health)).c_str(), servers_of(s).c_str(), s.health_reason.c_str());
  return ok == records && s.written == static_cast<unsigned long long>(records) &&
                 report.unwritten == 0
             ? 0
             : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 2 ? argv[1] : "";
  try {
    if (command == "read" && argc == 3) {
      auto db = auditpipe::Database::connect(argv[2]);
      const auto rows = db->query("SELECT pg_is_in_recovery()");
      std::printf("read: %s in_recovery=%s\n", db->describe().c_str(),
                  rows.at(0).at(0).value_or("?").c_str());
      return 0;
    }
    if (command == "exec" && argc == 4) {
      auditpipe::Database::connect(argv[2])->execute(argv[3]);
      return 0;
    }
    if (command == "count" && argc == 3) {
      const auto rows = auditpipe::Database::connect(argv[2])->query(
          "SELECT count(*) FROM audit_log WHERE sender = 'pg_attrs_probe'");
      std::printf("%s\n", rows.at(0).at(0).value_or("?").c_str());
      return 0;
    }
    if (command == "write" && argc == 6) {
      return write(argv[2], std::atol(argv[3]), std::atof(argv[4]), std::atoi(argv[5]) != 0);
    }
  } catch (const auditpipe::unreachable& e) {
    std::printf("threw unreachable: %s\n", e.what());
    return 3;
  } catch (const auditpipe::error& e) {
    std::printf("threw error: %s\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    std::printf("threw std::exception: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: pg_attrs_probe read <url> | exec <url> <sql> | count <url> | write <url> "
               "<records> <close seconds> <start_while_unreachable 0|1>\n");
  return 2;
}
