// sink_ceiling: auditpipe's PostgreSQL and SQLite sinks against the
// hand-written client loops they have to match, the same rows
// (bench/audit_event.h) into the same tables (the ones the sinks create),
// runs interleaved, every other round in reverse (A B C C B A ...), each
// PostgreSQL run from a CHECKPOINT; medians:
// auditpipe's two producers copy rows built beforehand into their records,
// as the raw loops use rows built beforehand.
//   PostgreSQL  auditpipe default (2 writers, COPY), and the same with
//               seal=hmac; a raw libpq COPY loop
//               over 2 connections with its buffers built beforehand (the
//               ceiling); the same formatting each buffer as it goes; the
//               same rows in COPY's binary format, built beforehand
//   SQLite      auditpipe default (1 writer); a raw sqlite3 loop of a
//               prepared INSERT ... ON CONFLICT DO NOTHING over rows built
//               beforehand, one transaction per 5000 rows, the sink's WAL
//               and synchronous=NORMAL
// For each: rows/s, its ratio to the ceiling, client CPU microseconds per
// row (this process's user + system time over the rows) and, for a
// PostgreSQL on this host, the server's (its processes' CPU time in /proc:
// the postmaster's children, the backends that exited among them). Here
// the server shares the cores, so a contender's rate follows both.
//
//   sink_ceiling <postgresql-url> <dir> [rows=400000] [runs=5] [only]
// (`only`: run just the contenders whose database or name contains it, e.g.
// `sqlite` for one database's ceiling and auditpipe, or `1 writer` to profile.)
// The SQLite file goes in <dir>.
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "log_rows.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::AuditEvent;

constexpr long long rows_per_batch = 5000;

double process_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "sink_ceiling: %s\n", what.c_str());
  std::exit(1);
}

// Field `n` (1-based, as proc(5) numbers them) of /proc/<pid>/stat, or -1.
// The name (field 2) is skipped whole: it may hold spaces.
double proc_stat(int pid, int n) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; rest >> field; ++i) {
    if (i == n) return std::atof(field.c_str());
  }
  return -1;
}

// --- PostgreSQL --------------------------------------------------------------

std::string pg_conninfo;

PGconn* pg_connect() {
  PGconn* c = PQconnectdb(pg_conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) die(std::string("cannot connect: ") + PQerrorMessage(c));
  return c;
}

void pg_exec(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
    die(sql.substr(0, 60) + ": " + PQerrorMessage(c));
  }
  PQclear(r);
}

// CHECKPOINT, so that a run does not pay for writing out the one before
// it: a 1,000,000-row run writes about 1 GB of WAL (max_wal_size's
// default), and the server checkpointed inside whichever contender ran
// next. Needs pg_checkpoint (scripts/postgres.sh grants it); without it the
// runs go on without one, and this says so once.
void pg_checkpoint(PGconn* c) {
  static bool refused = false;
  if (refused) return;
  PGresult* r = PQexec(c, "CHECKPOINT");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    refused = true;
    std::fprintf(stderr, "sink_ceiling: CHECKPOINT refused, runs start without one: %s",
                 PQerrorMessage(c));
  }
  PQclear(r);
}

long long pg_count(PGconn* c) {
  PGresult* r = PQexec(c, "SELECT count(*) FROM bench_audit");
  const long long n = PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoll(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  return n;
}

// CPU seconds of the PostgreSQL server so far, or NaN if it is not on this
// host: the postmaster (found as the parent of this connection's backend),
// its live children and the children it has reaped (backends exit at
// disconnect).
double pg_server_cpu() {
  static int postmaster = [] {
    PGconn* c = pg_connect();
    PGresult* r = PQexec(c, "SELECT pg_backend_pid()");
    const int backend = PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoi(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    PQfinish(c);
    return backend > 0 ? static_cast<int>(proc_stat(backend, 4)) : -1;
  }();
  if (postmaster <= 0) return NAN;
  double ticks = proc_stat(postmaster, 14) + proc_stat(postmaster, 15) + proc_stat(postmaster, 16) +
                 proc_stat(postmaster, 17);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::atoi(name.c_str());
    if (proc_stat(pid, 4) == postmaster) ticks += proc_stat(pid, 14) + proc_stat(pid, 15);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Row i in COPY's text format, the columns in the table's order; as the
// sink writes it (timestamps in UTC with an explicit offset).
void append_copy_row(std::string& out, const AuditEvent& e, long long source, long long seq) {
  char at[40];
  char* end = e.at.format(at);
  out.append(at, end);
  out += "+00\t";
  auto num = [&](long long v) {
    out += std::to_string(v);
    out += '\t';
  };
  auto text = [&](std::string_view v) {
    out += v;  // the generated rows hold no tab, newline or backslash
    out += '\t';
  };
  num(e.tenant_id);
  num(e.user_id);
  text(e.action);
  text(e.resource);
  num(e.status);
  num(e.latency_us);
  text(e.client_ip);
  text(e.request_id);
  text(e.detail);
  num(source);
  out += std::to_string(seq);
  out += '\n';
}

std::string copy_batch(long long begin, long long end, long long source) {
  std::string data;
  AuditEvent e;
  for (long long i = begin; i < end; ++i) {
    bench::fill_event(e, i);
    append_copy_row(data, e, source, i);
  }
  return data;
}

// The same rows in COPY's binary format (the table's types: timestamptz,
// bigint, bigint, text, text, integer, bigint, text, text, text, bigint,
// bigint).
void put_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
std::string binary_copy_batch(long long begin, long long end, long long source) {
  std::string data("PGCOPY\n\377\r\n\0", 11);
  put_be(data, 0, 4);  // flags
  put_be(data, 0, 4);  // header extension
  AuditEvent e;
  auto int8 = [&](long long v) {
    put_be(data, 8, 4);
    put_be(data, static_cast<std::uint64_t>(v), 8);
  };
  auto text = [&](std::string_view v) {
    put_be(data, v.size(), 4);
    data += v;
  };
  for (long long i = begin; i < end; ++i) {
    bench::fill_event(e, i);
    put_be(data, 12, 2);
    int8(e.at.micros - 946'684'800'000'000);  // PostgreSQL counts from 2000-01-01
    int8(e.tenant_id);
    int8(e.user_id);
    text(e.action);
    text(e.resource);
    put_be(data, 4, 4);
    put_be(data, static_cast<std::uint32_t>(e.status), 4);
    int8(e.latency_us);
    text(e.client_ip);
    text(e.request_id);
    text(e.detail);
    int8(source);
    int8(i);
  }
  put_be(data, 0xFFFF, 2);  // trailer
  return data;
}

void pg_copy(PGconn* c, const std::string& data, bool binary = false) {
  PGresult* r = PQexec(c, binary ? "COPY bench_audit (at,tenant_id,user_id,action,resource,status,"
                                   "latency_us,client_ip,request_id,detail,source_id,seq) FROM "
                                   "STDIN (FORMAT binary)"
                                 : "COPY bench_audit (at,tenant_id,user_id,action,resource,status,"
                                   "latency_us,client_ip,request_id,detail,source_id,seq) FROM "
                                   "STDIN");
  if (PQresultStatus(r) != PGRES_COPY_IN) die(std::string("COPY: ") + PQerrorMessage(c));
  PQclear(r);
  if (PQputCopyData(c, data.data(), static_cast<int>(data.size())) != 1 ||
      PQputCopyEnd(c, nullptr) != 1) {
    die(std::string("COPY data: ") + PQerrorMessage(c));
  }
  while (PGresult* res = PQgetResult(c)) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK) die(std::string("COPY: ") + PQerrorMessage(c));
    PQclear(res);
  }
}

// Batches of rows_per_batch rows, taken in turn by `connections` threads;
// built before the clock starts when `prebuilt`.
struct RawCopy {
  long long rows;
  unsigned connections;
  bool prebuilt;
  bool binary = false;
  std::vector<std::vector<std::string>> built;  // per connection

  std::string batch(long long b, long long source) const {
    const long long end = std::min(rows, b + rows_per_batch);
    return binary ? binary_copy_batch(b, end, source) : copy_batch(b, end, source);
  }

  void prepare() {
    built.assign(connections, {});
    if (!prebuilt) return;
    for (unsigned c = 0; c < connections; ++c) {
      for (long long b = c * rows_per_batch; b < rows; b += rows_per_batch * connections) {
        built[c].push_back(batch(b, c + 1));
      }
    }
  }
  void run() {
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < connections; ++c) {
      threads.emplace_back([this, c] {
        PGconn* conn = pg_connect();
        std::size_t k = 0;
        for (long long b = c * rows_per_batch; b < rows; b += rows_per_batch * connections, ++k) {
          if (prebuilt) {
            pg_copy(conn, built[c][k], binary);
          } else {
            pg_copy(conn, batch(b, c + 1), binary);
          }
        }
        PQfinish(conn);
      });
    }
    for (auto& t : threads) t.join();
  }
};

// --- SQLite ------------------------------------------------------------------

sqlite3* sqlite_open(const std::string& path) {
  sqlite3* db = nullptr;
  // Without SQLite's per-call mutex, as the sink opens its connection: the
  // loop is one thread's (with the mutex it was 7-24% slower).
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    die("cannot open " + path);
  }
  sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  return db;
}

void sqlite_exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    die(std::string(sql) + ": " + (message ? message : "?"));
  }
}

long long sqlite_count(const std::string& path) {
  sqlite3* db = sqlite_open(path);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM bench_audit", -1, &st, nullptr);
  const long long n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

struct RawSqlite {
  std::string path;
  long long rows;
  std::vector<AuditEvent> events;

  void prepare() {
    events.resize(static_cast<std::size_t>(rows));
    for (long long i = 0; i < rows; ++i) bench::fill_event(events[static_cast<std::size_t>(i)], i);
  }
  void run() {
    sqlite3* db = sqlite_open(path);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO bench_audit (at,tenant_id,user_id,action,resource,status,"
                           "latency_us,client_ip,request_id,detail,source_id,seq) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                           -1, &st, nullptr) != SQLITE_OK) {
      die(std::string("prepare: ") + sqlite3_errmsg(db));
    }
    auto text = [&](int i, std::string_view v) {
      sqlite3_bind_text(st, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    };
    for (long long b = 0; b < rows; b += rows_per_batch) {
      sqlite_exec(db, "BEGIN");
      for (long long i = b; i < std::min(rows, b + rows_per_batch); ++i) {
        const AuditEvent& e = events[static_cast<std::size_t>(i)];
        sqlite3_bind_int64(st, 1, e.at.micros);
        sqlite3_bind_int64(st, 2, e.tenant_id);
        sqlite3_bind_int64(st, 3, e.user_id);
        text(4, e.action);
        text(5, e.resource);
        sqlite3_bind_int64(st, 6, e.status);
        sqlite3_bind_int64(st, 7, e.latency_us);
        text(8, e.client_ip);
        text(9, e.request_id);
        text(10, e.detail);
        sqlite3_bind_int64(st, 11, 1);
        sqlite3_bind_int64(st, 12, i);
        if (sqlite3_step(st) != SQLITE_DONE) die(std::string("insert: ") + sqlite3_errmsg(db));
        sqlite3_reset(st);
      }
      sqlite_exec(db, "COMMIT");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
};

// --- auditpipe ---------------------------------------------------------------

// Two producers commit rows built beforehand (a copy each), like the raw
// loops' rows: what is measured is the pipeline and the sink.
std::vector<AuditEvent> built_events;

void build_events(long long rows) {
  if (built_events.size() == static_cast<std::size_t>(rows)) return;
  built_events.resize(static_cast<std::size_t>(rows));
  for (long long i = 0; i < rows; ++i)
    bench::fill_event(built_events[static_cast<std::size_t>(i)], i);
}

void auditpipe_run(const std::string& url, long long rows) {
  auditpipe::Logger<AuditEvent> logger(auditpipe::open(url));
  bench::log_rows(logger, rows, 2, [](AuditEvent& e, long long i) {
    e = built_events[static_cast<std::size_t>(i)];
  });
  const auto report = logger.close(std::chrono::minutes(10));
  if (!report.drained || report.stats.written != static_cast<std::uint64_t>(rows)) {
    die("auditpipe did not write every row");
  }
}

// --- the runs ----------------------------------------------------------------

struct Contender {
  std::string group;  // whose ceiling it is measured against
  std::string name;
  bool ceiling;
  std::function<void()> reset;    // an empty table, not timed
  std::function<void()> prepare;  // not timed
  std::function<void()> run;
  std::function<long long()> stored;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sink_ceiling <postgresql-url> <dir> [rows] [runs]\n");
    return 2;
  }
  const std::string pg_url = argv[1];
  const std::filesystem::path dir = argv[2];
  const long long rows = argc > 3 ? std::atoll(argv[3]) : 400000;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 5;
  const std::string only = argc > 5 ? argv[5] : "";
  std::filesystem::create_directories(dir);
  auditpipe::diagnostics()->set_level(spdlog::level::warn);
  {
    const auditpipe::Url u = auditpipe::parse_url(pg_url);
    const auto& h = u.hosts.at(0);
    pg_conninfo = "host=" + h.host + " port=" + std::to_string(h.port.value_or(5432)) +
                  " user=" + u.user + " dbname=" + u.path;
    if (u.password) pg_conninfo += " password=" + *u.password;
  }
  const std::string sqlite_path = (dir / "sink_ceiling.sqlite").string();
  const std::string sqlite_url = "sqlite://" + sqlite_path;

  // The tables as the sinks create them.
  // Empty tables, made by the URL the contender opens: with seal=, its seals
  // tables too, so that no contender creates a table in its timed run (the
  // sealed one did: two CREATE TABLEs and their commits, about 3% of a
  // 400,000-row run, beside a run that created none).
  auto pg_fresh_for = [&](const std::string& url) {
    return [&, url] {
      PGconn* c = pg_connect();
      pg_exec(c, "DROP TABLE IF EXISTS bench_audit");
      pg_exec(c, "DROP TABLE IF EXISTS bench_audit_seals");
      pg_exec(c, "DROP TABLE IF EXISTS bench_audit_unsealed");
      auditpipe::Logger<AuditEvent>(auditpipe::open(url)).close();
      pg_checkpoint(c);
      PQfinish(c);
    };
  };
  const auto pg_fresh = pg_fresh_for(pg_url);
  auto pg_stored = [] {
    PGconn* c = pg_connect();
    const long long n = pg_count(c);
    PQfinish(c);
    return n;
  };
  auto sqlite_fresh = [&] {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(sqlite_path + suffix);
    auditpipe::Logger<AuditEvent>(auditpipe::open(sqlite_url)).close();
  };
  auto sqlite_stored = [&] { return sqlite_count(sqlite_path); };

  // The sink with every batch sealed (README, Tamper-evident tables).
  const std::filesystem::path key = dir / "seal.key";
  {
    std::ofstream k(key);
    k << "bench/sink_ceiling seal key";
  }
  std::filesystem::permissions(
      key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string pg_sealed_url = pg_url + (pg_url.find('?') == std::string::npos ? "?" : "&") +
                                    "seal=hmac&seal_key_file=" + key.string();

  RawCopy copy_prebuilt{rows, 2, true, false, {}};
  RawCopy copy_as_it_goes{rows, 2, false, false, {}};
  RawCopy binary_prebuilt{rows, 2, true, true, {}};
  RawSqlite raw_sqlite{sqlite_path, rows, {}};
  std::vector<Contender> contenders = {
      {"postgresql", "auditpipe default (2 writers, COPY)", false, pg_fresh,
       [&] { build_events(rows); }, [&] { auditpipe_run(pg_url, rows); }, pg_stored},
      {"postgresql", "auditpipe default, seal=hmac", false, pg_fresh_for(pg_sealed_url),
       [&] { build_events(rows); }, [&] { auditpipe_run(pg_sealed_url, rows); }, pg_stored},
      {"postgresql", "raw COPY, 2 connections, rows built beforehand", true, pg_fresh,
       [&] { copy_prebuilt.prepare(); }, [&] { copy_prebuilt.run(); }, pg_stored},
      {"postgresql", "raw COPY, 2 connections, formatting as it goes", false, pg_fresh,
       [&] { copy_as_it_goes.prepare(); }, [&] { copy_as_it_goes.run(); }, pg_stored},
      {"postgresql", "raw binary COPY, 2 connections, built beforehand", false, pg_fresh,
       [&] { binary_prebuilt.prepare(); }, [&] { binary_prebuilt.run(); }, pg_stored},
      {"sqlite", "auditpipe default (1 writer)", false, sqlite_fresh, [&] { build_events(rows); },
       [&] { auditpipe_run(sqlite_url, rows); }, sqlite_stored},
      {"sqlite", "raw sqlite3 prepared INSERT, rows built beforehand", true, sqlite_fresh,
       [&] { raw_sqlite.prepare(); }, [&] { raw_sqlite.run(); }, sqlite_stored},
  };

  if (!only.empty()) {
    std::erase_if(contenders, [&](const Contender& c) {
      return c.group != only && c.name.find(only) == std::string::npos;
    });
  }
  std::map<std::string, std::vector<double>> rate, cpu, server;
  std::printf("sink_ceiling: %lld rows, %d runs\n", rows, runs);
  for (int run = 1; run <= runs; ++run) {
    // Every other round in reverse: what one run leaves the next (the
    // server's caches, its background writes, the page cache) falls on each
    // contender alike.
    std::vector<const Contender*> order;
    for (const Contender& c : contenders) order.push_back(&c);
    if (run % 2 == 0) std::reverse(order.begin(), order.end());
    for (const Contender* contender : order) {
      const Contender& c = *contender;
      c.reset();
      c.prepare();
      const bool pg = c.group == "postgresql";
      const double server0 = pg ? pg_server_cpu() : NAN;
      const double cpu0 = process_cpu();
      const auto t0 = Clock::now();
      c.run();
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      const double cpu_s = process_cpu() - cpu0;
      // The backends the run closed are reaped (their time moves to the
      // postmaster's children's) within milliseconds.
      if (pg) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double server_s = pg ? pg_server_cpu() - server0 : NAN;
      if (const long long n = c.stored(); n != rows) {
        die(c.name + ": stored " + std::to_string(n) + " of " + std::to_string(rows));
      }
      rate[c.name].push_back(static_cast<double>(rows) / seconds);
      cpu[c.name].push_back(cpu_s * 1e6 / static_cast<double>(rows));
      server[c.name].push_back(server_s * 1e6 / static_cast<double>(rows));
      std::printf("  run %d  %-52s %10.0f rows/s  %6.2f us cpu/row  %6.2f us server cpu/row\n", run,
                  c.name.c_str(), rate[c.name].back(), cpu[c.name].back(), server[c.name].back());
      std::fflush(stdout);
    }
  }
  std::printf("\n%-12s %-52s %12s %10s %12s %10s %12s\n", "database", "contender", "rows/s",
              "vs ceiling", "cpu us/row", "vs ceiling", "server us/row");
  for (const Contender& c : contenders) {
    const Contender* top = nullptr;
    for (const Contender& d : contenders) {
      if (d.group == c.group && d.ceiling) top = &d;
    }
    // Without its ceiling in this run (`only`), no ratio.
    const double top_rate = top ? median(rate[top->name]) : NAN;
    const double top_cpu = top ? median(cpu[top->name]) : NAN;
    std::printf("%-12s %-52s %12.0f %10.3f %12.2f %10.3f %12.2f\n", c.group.c_str(), c.name.c_str(),
                median(rate[c.name]), median(rate[c.name]) / top_rate, median(cpu[c.name]),
                median(cpu[c.name]) / top_cpu, median(server[c.name]));
  }
  return 0;
}
