// ingest: rows/s into the throwaway MariaDB, the same 10-column audit table
// (bench/audit_event.h, primary key (source_id, seq)) and the same rows,
// default durability, in one run:
//   auditpipe with its default options, the same with seal=hmac (and a
//   durable pool), and with each MySQL write path;
//   the seeds' baselines: a new connection per row, per-row autocommit
//   INSERT, DBCP's autocommit=false sequence per row, per-row prepared
//   inserts in 1000-row transactions;
//   the ceilings: LOAD DATA LOCAL of the same rows from memory, and a
//   hand-written array-binding loop with no pipeline (1 and 2 connections);
//   auditpipe into SQLite.
// For each: rows/s, ratios to the best raw loop, to LOAD DATA and to
// per-row autocommit, client and server CPU seconds (the client's without the
// threads that sample visibility), and for auditpipe the
// time from commit to row visible (p50/p99, sampled).
//
//   ingest <mysql-url> <results-dir> [scale=1.0] [runs=3] [only]
// (`only`: run just the contenders whose name contains it, or one of its
// `|`-separated parts, e.g. `auditpipe default|raw array` to compare one
// with its baseline; the ratios then lack the baselines that did not run.)
// Every contender runs `runs` times, interleaved (every other round in
// reverse); the table shows, for
// each, the run with the median rate. Writes <results-dir>/ingest.csv and
// prints the table.
#include <auditpipe/auditpipe.h>
#include <auditpipe/open.h>
#include <auditpipe/sink/sink.h>
#include <auditpipe/sink/url.h>
#include <mysql.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "audit_event.h"
#include "log_rows.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::AuditEvent;

struct Result {
  std::string name;
  long long rows = 0;
  double seconds = 0;
  double client_cpu = 0;
  double server_cpu = 0;
  double visible_p50_ms = NAN, visible_p99_ms = NAN;
  double rows_per_s() const { return static_cast<double>(rows) / seconds; }
};

auditpipe::Url server;
std::string server_url;

MYSQL* connect_raw(bool local_infile = false) {
  MYSQL* m = mysql_init(nullptr);
  const unsigned infile = local_infile ? 1 : 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &infile);
  const auto& h = server.hosts.at(0);
  if (mysql_real_connect(m, h.host.c_str(), server.user.c_str(),
                         server.password.value_or("").c_str(), server.path.c_str(),
                         h.port.value_or(3306), nullptr, 0) == nullptr) {
    std::fprintf(stderr, "ingest: cannot connect: %s\n", mysql_error(m));
    std::exit(1);
  }
  mysql_set_character_set(m, "utf8mb4");
  return m;
}

void query(MYSQL* m, const std::string& sql) {
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
    std::fprintf(stderr, "ingest: %s: %s\n", sql.substr(0, 80).c_str(), mysql_error(m));
    std::exit(1);
  }
  if (MYSQL_RES* r = mysql_store_result(m)) mysql_free_result(r);
}

// The table every contender writes: what auditpipe's MySQL sink creates.
void reset_table() {
  MYSQL* m = connect_raw();
  query(m, "DROP TABLE IF EXISTS bench_audit");
  query(m, "DROP TABLE IF EXISTS bench_audit_seals");
  query(m, "DROP TABLE IF EXISTS bench_audit_unsealed");
  query(
      m,
      "CREATE TABLE bench_audit (at DATETIME(6) NOT NULL, tenant_id BIGINT NOT NULL, user_id "
      "BIGINT "
      "NOT NULL, action VARCHAR(32) NOT NULL, resource VARCHAR(64) NOT NULL, status INT NOT NULL, "
      "latency_us BIGINT NOT NULL, client_ip VARCHAR(40) NOT NULL, request_id VARCHAR(36) NOT "
      "NULL, "
      "detail VARCHAR(160) NOT NULL, source_id BIGINT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY "
      "(source_id, seq)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
  mysql_close(m);
}

long long count_rows() {
  MYSQL* m = connect_raw();
  long long n = -1;
  if (mysql_query(m, "SELECT COUNT(*) FROM bench_audit") == 0) {
    MYSQL_RES* r = mysql_store_result(m);
    if (MYSQL_ROW row = mysql_fetch_row(r)) n = std::atoll(row[0]);
    mysql_free_result(r);
  }
  mysql_close(m);
  return n;
}

double process_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU seconds of the calling thread so far.
double thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// CPU seconds the measurement itself spent inside a run (the visibility
// probe's and watcher's threads, their queries and sleeps): taken off the
// contender's client CPU, which the raw loops do not pay.
std::atomic<double> measuring_cpu{0};
void add_measuring_cpu(double seconds) {
  double v = measuring_cpu.load();
  while (!measuring_cpu.compare_exchange_weak(v, v + seconds)) {
  }
}

// CPU seconds of the MariaDB server process so far.
double server_cpu() {
  const char* dir = std::getenv("AUDITPIPE_MARIADB_DIR");
  std::ifstream pidfile(std::string(dir ? dir : "build/mariadb") + "/mysqld.pid");
  int pid = 0;
  pidfile >> pid;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string field;
  double ticks = 0;
  for (int i = 1; stat >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Runs `body` (which writes `rows` rows, or returns how many it wrote) and
// measures it.
Result measure(const std::string& name, long long rows, const std::function<long long()>& body) {
  reset_table();
  std::printf("  %-40s ", name.c_str());
  std::fflush(stdout);
  measuring_cpu = 0;
  const double c0 = process_cpu(), s0 = server_cpu();
  const auto t0 = Clock::now();
  if (const long long written = body(); written > 0) rows = written;
  Result r;
  r.name = name;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.client_cpu = process_cpu() - c0 - measuring_cpu.load();
  r.server_cpu = server_cpu() - s0;
  r.rows = rows;
  const long long stored = name.rfind("auditpipe into SQLite", 0) == 0 ? rows : count_rows();
  if (stored != rows) std::printf("(stored %lld of %lld!) ", stored, rows);
  std::printf("%10.0f rows/s\n", r.rows_per_s());
  return r;
}

std::string escaped(MYSQL* m, std::string_view s) {
  std::string out(s.size() * 2 + 1, '\0');
  out.resize(mysql_real_escape_string(m, out.data(), s.data(), s.size()));
  return "'" + out + "'";
}

std::string insert_values(MYSQL* m, const AuditEvent& e, long long source, long long seq) {
  char at[32];
  *e.at.format(at) = '\0';
  return "('" + std::string(at) + "'," + std::to_string(e.tenant_id) + "," +
         std::to_string(e.user_id) + "," + escaped(m, e.action) + "," + escaped(m, e.resource) +
         "," + std::to_string(e.status) + "," + std::to_string(e.latency_us) + "," +
         escaped(m, e.client_ip) + "," + escaped(m, e.request_id) + "," + escaped(m, e.detail) +
         "," + std::to_string(source) + "," + std::to_string(seq) + ")";
}

const char* insert_head =
    "INSERT INTO bench_audit (at,tenant_id,user_id,action,resource,status,latency_us,client_ip,"
    "request_id,detail,source_id,seq) VALUES ";

// Per-row statements on one connection, optionally wrapped the way a
// pooled JDBC connection with autocommit=false wraps each use (seed 003).
void per_row(long long rows, bool dbcp_sequence) {
  MYSQL* m = connect_raw();
  AuditEvent e;
  for (long long i = 0; i < rows; ++i) {
    bench::fill_event(e, i);
    if (dbcp_sequence) query(m, "SET autocommit=0");
    query(m, insert_head + insert_values(m, e, 1, i));
    if (dbcp_sequence) {
      query(m, "COMMIT");
      query(m, "SELECT @@session.tx_read_only");  // MariaDB 10.11's name for it
      query(m, "ROLLBACK");
      query(m, "SET autocommit=1");
    }
  }
  mysql_close(m);
}

// A connection per row, as a client created per call does (seeds 002/004).
void connection_per_row(long long rows) {
  AuditEvent e;
  for (long long i = 0; i < rows; ++i) {
    MYSQL* m = connect_raw();
    bench::fill_event(e, i);
    query(m, insert_head + insert_values(m, e, 1, i));
    mysql_close(m);
  }
}

// Prepared single-row inserts, committed every 1000 rows.
void prepared_in_transactions(long long rows) {
  MYSQL* m = connect_raw();
  MYSQL_STMT* st = mysql_stmt_init(m);
  const std::string sql = std::string(insert_head) + "(?,?,?,?,?,?,?,?,?,?,?,?)";
  mysql_stmt_prepare(st, sql.data(), sql.size());
  AuditEvent e;
  MYSQL_BIND b[12] = {};
  MYSQL_TIME at{};
  long long ints[6];
  unsigned long lens[5];
  query(m, "START TRANSACTION");
  for (long long i = 0; i < rows; ++i) {
    bench::fill_event(e, i);
    const auto c = e.at.civil();
    at.year = static_cast<unsigned>(c.year), at.month = c.month, at.day = c.day, at.hour = c.hour;
    at.minute = c.minute, at.second = c.second, at.second_part = c.microsecond;
    at.time_type = MYSQL_TIMESTAMP_DATETIME;
    ints[0] = e.tenant_id, ints[1] = e.user_id, ints[2] = e.status, ints[3] = e.latency_us,
    ints[4] = 1, ints[5] = i;
    const std::string_view texts[5] = {e.action, e.resource, e.client_ip, e.request_id, e.detail};
    b[0].buffer_type = MYSQL_TYPE_DATETIME, b[0].buffer = &at;
    const int int_cols[6] = {1, 2, 5, 6, 10, 11};
    for (int k = 0; k < 6; ++k)
      b[int_cols[k]].buffer_type = MYSQL_TYPE_LONGLONG, b[int_cols[k]].buffer = &ints[k];
    const int text_cols[5] = {3, 4, 7, 8, 9};
    for (int k = 0; k < 5; ++k) {
      lens[k] = texts[k].size();
      b[text_cols[k]].buffer_type = MYSQL_TYPE_STRING;
      b[text_cols[k]].buffer = const_cast<char*>(texts[k].data());
      b[text_cols[k]].length = &lens[k];
    }
    mysql_stmt_bind_param(st, b);
    if (mysql_stmt_execute(st) != 0) std::fprintf(stderr, "ingest: %s\n", mysql_stmt_error(st));
    if ((i + 1) % 1000 == 0) {
      query(m, "COMMIT");
      query(m, "START TRANSACTION");
    }
  }
  query(m, "COMMIT");
  mysql_stmt_close(st);
  mysql_close(m);
}

// LOAD DATA LOCAL of the rows, streamed from memory, `per_statement` rows
// a statement, on `connections` connections.
struct InfileData {
  const std::string* data;
  std::size_t pos;
};
int infile_init(void** ptr, const char*, void* userdata) {
  static_cast<InfileData*>(userdata)->pos = 0;
  *ptr = userdata;
  return 0;
}
int infile_read(void* ptr, char* buf, unsigned int len) {
  auto* d = static_cast<InfileData*>(ptr);
  const std::size_t n = std::min<std::size_t>(len, d->data->size() - d->pos);
  std::memcpy(buf, d->data->data() + d->pos, n);
  d->pos += n;
  return static_cast<int>(n);
}
void infile_end(void*) {}
int infile_error(void*, char*, unsigned int) {
  return 0;
}

void load_data(long long rows, unsigned connections, long long per_statement) {
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < connections; ++c) {
    threads.emplace_back([=] {
      MYSQL* m = connect_raw(true);
      std::string data;
      InfileData d{&data, 0};
      mysql_set_local_infile_handler(m, infile_init, infile_read, infile_end, infile_error, &d);
      AuditEvent e;
      for (long long begin = c * per_statement; begin < rows;
           begin += per_statement * connections) {
        data.clear();
        for (long long i = begin; i < std::min(rows, begin + per_statement); ++i) {
          bench::fill_event(e, i);
          char at[32];
          data.append(at, e.at.format(at));
          for (const std::string& v :
               {std::to_string(e.tenant_id), std::to_string(e.user_id),
                std::string(e.action.view()), std::string(e.resource.view()),
                std::to_string(e.status), std::to_string(e.latency_us),
                std::string(e.client_ip.view()), std::string(e.request_id.view()),
                std::string(e.detail.view()), std::string("1"), std::to_string(i)}) {
            data += '\t';
            data += v;  // the generated rows hold no tabs, newlines or backslashes
          }
          data += '\n';
        }
        query(m,
              "LOAD DATA LOCAL INFILE 'rows' INTO TABLE bench_audit CHARACTER SET utf8mb4 "
              "(at,tenant_id,user_id,action,resource,status,latency_us,client_ip,request_id,detail,"
              "source_id,seq)");
      }
      mysql_close(m);
    });
  }
  for (auto& t : threads) t.join();
}

// The fastest raw path by hand: MariaDB array binding, `batch` rows per
// execute, on `connections` connections, no pipeline.
void raw_array_binding(long long rows, unsigned connections, long long batch) {
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < connections; ++c) {
    threads.emplace_back([=] {
      MYSQL* m = connect_raw();
      MYSQL_STMT* st = mysql_stmt_init(m);
      const std::string sql = std::string(insert_head) + "(?,?,?,?,?,?,?,?,?,?,?,?)";
      mysql_stmt_prepare(st, sql.data(), sql.size());
      std::vector<AuditEvent> events(static_cast<std::size_t>(batch));
      std::vector<MYSQL_TIME> times(static_cast<std::size_t>(batch));
      std::vector<MYSQL_TIME*> time_ptrs(static_cast<std::size_t>(batch));
      std::vector<long long> ints[6];
      std::vector<const char*> text_ptrs[5];
      std::vector<unsigned long> text_lens[5];
      for (auto& v : ints) v.resize(static_cast<std::size_t>(batch));
      for (int k = 0; k < 5; ++k)
        text_ptrs[k].resize(static_cast<std::size_t>(batch)),
            text_lens[k].resize(static_cast<std::size_t>(batch));
      MYSQL_BIND b[12] = {};
      for (long long begin = c * batch; begin < rows; begin += batch * connections) {
        const long long n = std::min(batch, rows - begin);
        for (long long j = 0; j < n; ++j) {
          AuditEvent& e = events[static_cast<std::size_t>(j)];
          bench::fill_event(e, begin + j);
          const auto cv = e.at.civil();
          MYSQL_TIME& t = times[static_cast<std::size_t>(j)];
          t = MYSQL_TIME{};
          t.year = static_cast<unsigned>(cv.year), t.month = cv.month, t.day = cv.day,
          t.hour = cv.hour;
          t.minute = cv.minute, t.second = cv.second, t.second_part = cv.microsecond;
          t.time_type = MYSQL_TIMESTAMP_DATETIME;
          time_ptrs[static_cast<std::size_t>(j)] = &t;
          const long long iv[6] = {e.tenant_id, e.user_id, e.status, e.latency_us, 2, begin + j};
          for (int k = 0; k < 6; ++k) ints[k][static_cast<std::size_t>(j)] = iv[k];
          const std::string_view tv[5] = {e.action, e.resource, e.client_ip, e.request_id,
                                          e.detail};
          for (int k = 0; k < 5; ++k) {
            text_ptrs[k][static_cast<std::size_t>(j)] = tv[k].data();
            text_lens[k][static_cast<std::size_t>(j)] = tv[k].size();
          }
        }
        b[0].buffer_type = MYSQL_TYPE_DATETIME, b[0].buffer = time_ptrs.data();
        const int int_cols[6] = {1, 2, 5, 6, 10, 11};
        for (int k = 0; k < 6; ++k)
          b[int_cols[k]].buffer_type = MYSQL_TYPE_LONGLONG, b[int_cols[k]].buffer = ints[k].data();
        const int text_cols[5] = {3, 4, 7, 8, 9};
        for (int k = 0; k < 5; ++k) {
          b[text_cols[k]].buffer_type = MYSQL_TYPE_STRING;
          b[text_cols[k]].buffer = text_ptrs[k].data();
          b[text_cols[k]].length = text_lens[k].data();
        }
        unsigned int size = static_cast<unsigned int>(n);
        mysql_stmt_attr_set(st, STMT_ATTR_ARRAY_SIZE, &size);
        mysql_stmt_bind_param(st, b);
        if (mysql_stmt_execute(st) != 0) std::fprintf(stderr, "ingest: %s\n", mysql_stmt_error(st));
      }
      mysql_stmt_close(st);
      mysql_close(m);
    });
  }
  for (auto& t : threads) t.join();
}

// auditpipe with `options` into `url`, two producers, plus a probe thread
// that commits one sampled record every 5 ms and watches for it to
// become visible (by its primary key, polled every 2 ms), for
// commit-to-visible latency.
Result auditpipe_run(const std::string& name, const std::string& url, auditpipe::Options options,
                     long long rows, bool sample_visibility) {
  std::vector<double> visible_ms;
  const std::int64_t probe_source = 0x5EED0000;
  Result r = measure(name, rows, [&] {
    options.source_id_base = probe_source;  // the probe registers first: source base+0
    auditpipe::Logger<AuditEvent> logger(auditpipe::open(url), options);
    std::atomic<bool> done{false};
    std::vector<std::pair<std::int64_t, Clock::time_point>> samples;
    std::mutex samples_mutex;
    std::atomic<long long> probe_count{0};
    std::thread probe;
    std::thread watcher;
    if (sample_visibility) {
      std::atomic<bool> registered{false};
      probe = std::thread([&] {
        AuditEvent e;
        for (std::int64_t k = 0; !done.load(); ++k) {
          auto h = logger.acquire();
          if (!h) continue;
          bench::fill_event(*h, (std::int64_t{1} << 40) + k);  // apart from the producers' rows
          const auto t = Clock::now();
          if (h.commit() == auditpipe::Status::ok) {
            std::lock_guard<std::mutex> lock(samples_mutex);
            samples.emplace_back(k, t);
            ++probe_count;
          }
          registered = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        add_measuring_cpu(thread_cpu());
      });
      while (!registered.load()) std::this_thread::yield();
      watcher = std::thread([&] {
        MYSQL* m = connect_raw();
        std::size_t next = 0;
        while (!done.load() || static_cast<long long>(next) < probe_count.load()) {
          std::pair<std::int64_t, Clock::time_point> s;
          {
            std::lock_guard<std::mutex> lock(samples_mutex);
            if (next >= samples.size()) {
              if (done.load()) break;
              s.first = -1;
            } else {
              s = samples[next];
            }
          }
          if (s.first < 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            continue;
          }
          const std::string q =
              "SELECT 1 FROM bench_audit WHERE source_id = " + std::to_string(probe_source) +
              " AND seq = " + std::to_string(s.first);
          bool seen = false;
          if (mysql_real_query(m, q.data(), q.size()) == 0) {
            MYSQL_RES* res = mysql_store_result(m);
            seen = res && mysql_num_rows(res) == 1;
            if (res) mysql_free_result(res);
          }
          if (seen) {
            visible_ms.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - s.second).count());
            ++next;
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }
        mysql_close(m);
        add_measuring_cpu(thread_cpu());
      });
    }
    bench::log_rows(logger, rows, 2, bench::fill_event);
    done = true;
    if (probe.joinable()) probe.join();
    logger.close(std::chrono::minutes(10));
    if (watcher.joinable()) watcher.join();
    return rows + probe_count.load();  // the probe's rows count too
  });
  if (!visible_ms.empty()) {
    std::sort(visible_ms.begin(), visible_ms.end());
    r.visible_p50_ms = visible_ms[visible_ms.size() / 2];
    r.visible_p99_ms = visible_ms[std::min(visible_ms.size() - 1, visible_ms.size() * 99 / 100)];
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ingest <mysql-url> <results-dir> [scale] [runs] [only]\n");
    return 2;
  }
  server_url = argv[1];
  server = auditpipe::parse_url(server_url);
  const std::filesystem::path out = argv[2];
  const double scale = argc > 3 ? std::atof(argv[3]) : 1.0;
  const int reps = std::max(1, argc > 4 ? std::atoi(argv[4]) : 3);
  auto rows = [&](long long n) {
    return std::max(100LL, static_cast<long long>(static_cast<double>(n) * scale));
  };
  std::filesystem::create_directories(out);
  auditpipe::diagnostics()->set_level(spdlog::level::warn);
  const std::string url = server_url + (server_url.find('?') == std::string::npos ? "?" : "&");

  // Every contender runs `reps` times, in turn, every other round in
  // reverse (A B C, C B A, ...): what one run leaves the next (InnoDB's
  // dirty pages still being flushed, the page cache) falls on each alike.
  // The run with the median rate stands for it.
  struct Contender {
    std::string name;
    std::function<Result()> run;
  };
  std::vector<Contender> contenders;
  auto add = [&](std::string name, std::function<Result()> run) {
    contenders.push_back({std::move(name), std::move(run)});
  };
  add("auditpipe default", [&] {
    return auditpipe_run("auditpipe default", server_url, auditpipe::Options{}, rows(400000), true);
  });
  // Sealing (README, Tamper-evident tables): the same default run with every
  // batch sealed (HMAC-SHA-256, one seal statement per batch).
  const std::filesystem::path key = out / "seal.key";
  {
    std::ofstream k(key, std::ios::trunc);
    k << "bench/ingest seal key";
  }
  std::filesystem::permissions(
      key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  add("auditpipe default, seal=hmac", [&] {
    return auditpipe_run("auditpipe default, seal=hmac",
                         url + "seal=hmac&seal_key_file=" + key.string(), auditpipe::Options{},
                         rows(400000), true);
  });
  // The same with a durable pool: a batch counts as written only once its
  // seal is stored (SealWriter::stored_by), so the writer waits for it.
  add("auditpipe default, seal=hmac, durable pool", [&] {
    auditpipe::Options o;
    o.durable_path = (out / "ingest.pool").string();
    std::filesystem::remove(o.durable_path);
    return auditpipe_run("auditpipe default, seal=hmac, durable pool",
                         url + "seal=hmac&seal_key_file=" + key.string(), o, rows(400000), true);
  });
  for (const char* path : {"bulk", "load_data", "text"}) {
    const std::string name = std::string("auditpipe ") + path + ", 2 writers, batch 5000";
    add(name, [&, name, path] {
      auditpipe::Options o;
      o.writers = 2;
      o.batch_size = 5000;
      o.write_latency_target = std::chrono::milliseconds(0);  // every batch 5000
      return auditpipe_run(name, url + "write_path=" + path, o, rows(400000), true);
    });
  }
  const long long conn_rows = rows(1000), autocommit_rows = rows(10000), dbcp_rows = rows(4000);
  add("new connection per row", [&] {
    return measure("new connection per row", conn_rows, [&] {
      connection_per_row(conn_rows);
      return 0LL;
    });
  });
  add("per-row autocommit INSERT", [&] {
    return measure("per-row autocommit INSERT", autocommit_rows, [&] {
      per_row(autocommit_rows, false);
      return 0LL;
    });
  });
  add("per-row DBCP autocommit=false sequence", [&] {
    return measure("per-row DBCP autocommit=false sequence", dbcp_rows, [&] {
      per_row(dbcp_rows, true);
      return 0LL;
    });
  });
  const long long prepared_rows = rows(100000);
  add("prepared rows, 1000 per transaction", [&] {
    return measure("prepared rows, 1000 per transaction", prepared_rows, [&] {
      prepared_in_transactions(prepared_rows);
      return 0LL;
    });
  });
  const long long bulk_rows = rows(400000);
  for (unsigned c : {1u, 2u}) {
    const std::string load_name = "raw LOAD DATA LOCAL, " + std::to_string(c) + " conn";
    add(load_name, [&, c, load_name] {
      return measure(load_name, bulk_rows, [&] {
        load_data(bulk_rows, c, 50000);
        return 0LL;
      });
    });
    const std::string bind_name = "raw array binding, " + std::to_string(c) + " conn";
    add(bind_name, [&, c, bind_name] {
      return measure(bind_name, bulk_rows, [&] {
        raw_array_binding(bulk_rows, c, 5000);
        return 0LL;
      });
    });
  }
  add("auditpipe into SQLite", [&] {
    const std::filesystem::path db = out / "ingest.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
    auditpipe::Options o;
    const long long n = rows(400000);
    Result r = measure("auditpipe into SQLite", n, [&] {
      auditpipe::Logger<AuditEvent> logger(auditpipe::open("sqlite://" + db.string()), o);
      bench::log_rows(logger, n, 2, bench::fill_event);
      logger.close(std::chrono::minutes(10));
      return 0LL;
    });
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
    return r;
  });

  if (argc > 5) {
    // `a|b`: either, so a contender and its baseline still run interleaved.
    std::vector<std::string> wanted;
    for (std::string_view rest = argv[5];;) {
      const auto bar = rest.find('|');
      wanted.emplace_back(rest.substr(0, bar));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    std::erase_if(contenders, [&](const Contender& c) {
      return std::none_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
        return c.name.find(w) != std::string::npos;
      });
    });
  }

  std::printf("ingest into %s (scale %.2f, %d runs each)\n", server.redacted().c_str(), scale,
              reps);
  std::map<std::string, std::vector<Result>> runs;
  for (int rep = 1; rep <= reps; ++rep) {
    std::printf(" run %d\n", rep);
    std::vector<const Contender*> order;
    for (const Contender& c : contenders) order.push_back(&c);
    if (rep % 2 == 0) std::reverse(order.begin(), order.end());
    for (const Contender* c : order) runs[c->name].push_back(c->run());
  }
  std::vector<Result> results;
  for (const Contender& c : contenders) {
    std::vector<Result>& v = runs[c.name];
    std::sort(v.begin(), v.end(),
              [](const Result& a, const Result& b) { return a.rows_per_s() < b.rows_per_s(); });
    results.push_back(v[v.size() / 2]);
  }

  auto best = [&](const std::string& prefix) {
    double b = 0;
    for (const auto& r : results) {
      if (r.name.rfind(prefix, 0) == 0) b = std::max(b, r.rows_per_s());
    }
    return b;
  };
  const double best_raw = std::max(best("raw array binding"), best("raw LOAD DATA"));
  const double load = best("raw LOAD DATA");
  const double autocommit = best("per-row autocommit");
  std::ofstream csv(out / "ingest.csv");
  csv << "name,rows,seconds,rows_per_s,vs_best_raw,vs_load_data,vs_per_row_autocommit,client_cpu_s,"
         "server_cpu_s,visible_p50_ms,visible_p99_ms\n";
  std::printf("\n%-42s %12s %9s %9s %10s %8s %8s %10s %10s\n", "contender", "rows/s", "vs best",
              "vs LOAD", "vs per-row", "cpu cl", "cpu srv", "vis p50ms", "vis p99ms");
  for (const auto& r : results) {
    std::printf("%-42s %12.0f %9.3f %9.3f %10.1f %8.2f %8.2f %10.1f %10.1f\n", r.name.c_str(),
                r.rows_per_s(), r.rows_per_s() / best_raw, r.rows_per_s() / load,
                r.rows_per_s() / autocommit, r.client_cpu, r.server_cpu, r.visible_p50_ms,
                r.visible_p99_ms);
    csv << '"' << r.name << "\"," << r.rows << ',' << r.seconds << ',' << r.rows_per_s() << ','
        << r.rows_per_s() / best_raw << ',' << r.rows_per_s() / load << ','
        << r.rows_per_s() / autocommit << ',' << r.client_cpu << ',' << r.server_cpu << ','
        << r.visible_p50_ms << ',' << r.visible_p99_ms << '\n';
  }
  reset_table();
  return 0;
}
