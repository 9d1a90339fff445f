// cluster_producer: the application the cluster fault tests (and the
// scale-out numbers, docs/scale-out.md) run while the shell kills, stops
// and restarts nodes around it.
//
//   cluster_producer <sink-url> <threads> <seconds> <rows/s, 0: unlimited>
//                    <max_wait ms> <writers> <check-url>...
//
// Drops table audit_log (through <sink-url>; the sink creates it), then logs
// from <threads> producer threads (Overflow::block, max_wait as given) for
// <seconds>, remembering the message_id of every record whose commit()
// returned ok. Every 50 ms it looks at stats(): a stall (no batch stored for
// more than 200 ms) is printed with its length and the servers the
// connections are on when writing resumed. After close() it reads every
// check URL (each node) and prints, per node: rows, distinct (source_id,
// seq), ok records missing (lost) and rows above distinct (duplicated).
// Exit 0 only if nothing is lost or duplicated, every node has exactly the
// ok records, and the nodes agree; 1 otherwise.
//
// Every record's sender is CLUSTER_PRODUCER_TAG ("single" when unset) and
// the checks count only the rows with that sender; with the variable set
// (several processes writing at once) the table is not dropped.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "audit_row.h"
#include "auditpipe/database.h"
#include "auditpipe/logger.h"
#include "auditpipe/open.h"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string servers_of(const auditpipe::Stats& s) {
  if (!s.connection_pool) return "-";
  std::string out;
  for (const std::string& server : s.connection_pool->servers) {
    out += (out.empty() ? "" : ",") + server;
  }
  return out.empty() ? "none" : out;
}

// The lost message ids as ranges (ids are handed out in commit order, so
// with a rate each range has an approximate time into the run): which
// moment of the fault lost them.
void print_missing(std::vector<std::int64_t> ids, double rate) {
  std::sort(ids.begin(), ids.end());
  std::size_t printed = 0;
  for (std::size_t i = 0; i < ids.size() && printed < 20;) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] - ids[j] <= 8) ++j;
    std::printf("  lost message_id %lld..%lld (%zu ids)", static_cast<long long>(ids[i]),
                static_cast<long long>(ids[j]), j - i + 1);
    if (rate > 0) std::printf(", produced near t=%.2fs", static_cast<double>(ids[i]) / rate);
    std::printf("\n");
    ++printed;
    i = j + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: cluster_producer <sink-url> <threads> <seconds> <rows/s> <max_wait ms> "
                 "<writers> <check-url>...\n");
    return 2;
  }
  const std::string url = argv[1];
  const int threads = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  const double rate = std::atof(argv[4]);
  const auto max_wait = std::chrono::milliseconds(std::atoll(argv[5]));
  const unsigned writers = static_cast<unsigned>(std::atoi(argv[6]));
  std::vector<std::string> checks(argv + 7, argv + argc);
  const bool postgres = url.rfind("postgres", 0) == 0;

  try {
    const char* tag_env = std::getenv("CLUSTER_PRODUCER_TAG");
    const std::string tag = tag_env != nullptr && *tag_env != '\0' ? tag_env : "single";
    if (tag == "single") {
      auto db = auditpipe::Database::connect(url);
      db->execute("DROP TABLE IF EXISTS audit_log");
    }
    auditpipe::Options o;
    o.capacity = 50000;
    o.batch_size = 1000;
    o.overflow = auditpipe::Overflow::block;
    o.max_wait = max_wait;
    o.writers = writers;
    o.close_timeout = std::chrono::seconds(120);
    o.retry_backoff_max = std::chrono::milliseconds(1000);
    std::vector<std::vector<std::int64_t>> ok_ids(static_cast<std::size_t>(threads));
    std::atomic<std::int64_t> next{1};
    std::atomic<std::uint64_t> produced{0}, not_ok{0};
    double elapsed = 0;
    std::uint64_t written = 0;
    {
      auditpipe::Logger<testing_support::AuditRow> logger(auditpipe::open(url), o);
      const auto t0 = clock_type::now();
      const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(
                                std::chrono::duration<double>(seconds));
      std::atomic<bool> done{false};
      std::vector<std::thread> producers;
      for (int t = 0; t < threads; ++t) {
        producers.emplace_back([&, t] {
          auto& mine = ok_ids[static_cast<std::size_t>(t)];
          const double per_thread = rate / threads;
          std::uint64_t n = 0;
          while (clock_type::now() < end) {
            if (per_thread > 0) {
              const auto due = t0 + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(n / per_thread));
              if (due > clock_type::now()) std::this_thread::sleep_until(due);
            }
            ++n;
            produced.fetch_add(1, std::memory_order_relaxed);
            const std::int64_t id = next.fetch_add(1, std::memory_order_relaxed);
            auto r = logger.acquire();
            if (!r) {
              not_ok.fetch_add(1, std::memory_order_relaxed);
              continue;
            }
            r->message_id = id;
            r->status = t;
            r->payload = "cluster fault test";
            r->sender = tag;
            if (r.commit() == auditpipe::Status::ok) {
              mine.push_back(id);
            } else {
              not_ok.fetch_add(1, std::memory_order_relaxed);
            }
          }
        });
      }
      // The watcher: stalls, and where the connections are.
      std::thread watcher([&] {
        std::uint64_t last = 0;
        auto last_change = clock_type::now();
        double longest = 0;
        std::string last_servers;
        while (!done.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          const auditpipe::Stats s = logger.stats();
          const auto now = clock_type::now();
          const std::string servers = servers_of(s);
          if (s.written != last) {
            const double stall = std::chrono::duration<double>(now - last_change).count();
            if (stall > 0.2 && last != 0) {
              longest = std::max(longest, stall);
              std::printf("t=%.2fs stall %.2f s ended; connections on %s\n", seconds_since(t0),
                          stall, servers.c_str());
            }
            last = s.written;
            last_change = now;
          }
          if (servers != last_servers) {
            std::printf("t=%.2fs connections on %s (written %llu)\n", seconds_since(t0),
                        servers.c_str(), static_cast<unsigned long long>(s.written));
            last_servers = servers;
          }
          std::fflush(stdout);
        }
        std::printf("longest stall %.2f s\n", longest);
      });
      for (auto& p : producers) p.join();
      logger.close();
      elapsed = seconds_since(t0);  // until everything committed is stored
      done = true;
      watcher.join();
      const auditpipe::Stats s = logger.stats();
      written = s.written;
      std::printf(
          "stats: written %llu, retries %llu, write_failures %llu, timed_out %llu, "
          "longest producer wait %.3f s (max_wait %.3f s)\n",
          static_cast<unsigned long long>(s.written), static_cast<unsigned long long>(s.retries),
          static_cast<unsigned long long>(s.write_failures),
          static_cast<unsigned long long>(s.timed_out), s.producer_wait_ns.max / 1e9,
          std::chrono::duration<double>(max_wait).count());
    }
    std::unordered_set<std::int64_t> ok;
    for (const auto& v : ok_ids) ok.insert(v.begin(), v.end());
    std::printf("produced %llu, ok %zu, not ok %llu, stored in %.1f s: %.0f ok rows/s\n",
                static_cast<unsigned long long>(produced.load()), ok.size(),
                static_cast<unsigned long long>(not_ok.load()), elapsed,
                static_cast<double>(ok.size()) / elapsed);
    bool good = written >= ok.size();
    long long first_rows = -1;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      // A node that rejoins after the run may still be in its state
      // transfer: asked again for up to 120 s.
      long long rows = 0, distinct = 0;
      std::unordered_set<std::int64_t> stored;
      std::string where;
      for (int attempt = 0;; ++attempt) {
        try {
          auto db = auditpipe::Database::connect(checks[i]);
          if (!postgres) db->execute("SET SESSION wsrep_sync_wait = 1");
          const auto counts = db->query(
              postgres ? "SELECT COUNT(*), COUNT(DISTINCT (source_id, seq)) FROM audit_log "
                         "WHERE sender = ?"
                       : "SELECT COUNT(*), COUNT(DISTINCT source_id, seq) FROM audit_log "
                         "WHERE sender = ?",
              {tag});
          rows = std::stoll(counts.at(0).at(0).value_or("0"));
          distinct = std::stoll(counts.at(0).at(1).value_or("0"));
          stored.clear();
          for (const auto& row :
               db->query("SELECT message_id FROM audit_log WHERE sender = ?", {tag})) {
            stored.insert(std::stoll(row.at(0).value_or("0")));
          }
          where = db->describe();
          break;
        } catch (const std::exception& e) {
          if (attempt >= 120) throw;
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
      }
      std::vector<std::int64_t> missing;
      for (const std::int64_t id : ok) {
        if (stored.count(id) == 0) missing.push_back(id);
      }
      const std::size_t lost = missing.size();
      const long long duplicated = rows - distinct;
      std::printf(
          "node %zu (%s): written %lld, distinct %lld, duplicated %lld, lost %zu, extra %lld\n",
          i + 1, where.c_str(), rows, distinct, duplicated, lost,
          rows - static_cast<long long>(ok.size()));
      print_missing(missing, rate);
      if (lost != 0 || duplicated != 0 || rows != static_cast<long long>(ok.size())) good = false;
      if (first_rows >= 0 && rows != first_rows) good = false;
      first_rows = rows;
    }
    std::printf("%s\n", good ? "RESULT ok: nothing lost, nothing duplicated, the nodes agree"
                             : "RESULT FAILED");
    return good ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_producer: %s\n", e.what());
    return 1;
  }
}
