// message_platform: the scenario auditpipe was built for.
//
// N worker threads process messages and leave one audit row per message,
// through logger.log(message). At the end the logger is closed (drained),
// the rows are counted with a real query, and a report says what it cost:
// throughput, hot-path latency, allocations per record, drops, memory.
//
//   message_platform [--threads N] [--messages N] [--url URL] [--capacity N]
//                    [--batch N] [--writers N] [--overflow block|drop|fail]
//                    [--max-wait-ms N]
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <auditpipe/open.h>
#include <auditpipe/sink/url.h>
#include "alloc_counter.h"

#include "database.h"
#include "sub_message.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  int threads = 100;
  long long messages = 1'000'000;
  std::string url = "sqlite://message_platform.db";
  std::size_t capacity = 65536;
  std::size_t batch = 1000;
  unsigned writers = 1;
  auditpipe::Overflow overflow = auditpipe::Overflow::block;
  long long max_wait_ms = 1000;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "message_platform: %s\n"
               "usage: message_platform [--threads N] [--messages N] [--url URL] [--capacity N]\n"
               "                        [--batch N] [--writers N] [--overflow block|drop|fail]\n"
               "                        [--max-wait-ms N]\n",
               why);
  std::exit(2);
}

long long number(const char* flag, const char* text, long long min) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min) {
    usage((std::string(flag) + " needs a whole number >= " + std::to_string(min)).c_str());
  }
  return v;
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("audit a simulated message platform");
    if (i + 1 >= argc) usage((flag + " needs a value").c_str());
    const char* value = argv[++i];
    if (flag == "--threads")
      c.threads = static_cast<int>(number("--threads", value, 1));
    else if (flag == "--messages")
      c.messages = number("--messages", value, 1);
    else if (flag == "--url")
      c.url = value;
    else if (flag == "--capacity")
      c.capacity = static_cast<std::size_t>(number("--capacity", value, 1));
    else if (flag == "--batch")
      c.batch = static_cast<std::size_t>(number("--batch", value, 1));
    else if (flag == "--writers")
      c.writers = static_cast<unsigned>(number("--writers", value, 1));
    else if (flag == "--max-wait-ms")
      c.max_wait_ms = number("--max-wait-ms", value, 0);
    else if (flag == "--overflow") {
      const std::string v = value;
      if (v == "block")
        c.overflow = auditpipe::Overflow::block;
      else if (v == "drop")
        c.overflow = auditpipe::Overflow::drop;
      else if (v == "fail")
        c.overflow = auditpipe::Overflow::fail;
      else
        usage("--overflow takes block, drop or fail");
    } else {
      usage(("unknown flag " + flag).c_str());
    }
  }
  return c;
}

// What one worker measured.
struct WorkerResult {
  std::vector<std::uint32_t> latency_ns;  // sampled log() durations
  std::size_t steady_records = 0;         // log() calls after warm-up
  std::size_t steady_allocations = 0;     // operator new calls inside them
  std::size_t not_ok = 0;
};

constexpr int sample_every = 16;

void work(auditpipe::Logger<platform::AuditRow>& logger, int worker, long long first,
          long long count, WorkerResult& out) {
  out.latency_ns.reserve(static_cast<std::size_t>(count / sample_every + 1));
  static const char* const names[] = {"alice", "bob", "carol", "dave", "erin", "frank", "grace"};
  platform::SubMessage m;
  m.worker = worker;
  m.payload.reserve(160);
  m.sender.reserve(48);
  m.receiver.reserve(48);
  const long long warmup = count / 10;
  char buf[160];
  for (long long i = 0; i < count; ++i) {
    // "Process" the message: the platform's own work, not auditpipe's.
    const long long id = first + i;
    m.message_id = id;
    m.conversation_id = id / 7;
    std::snprintf(buf, sizeof buf, "%s.%lld@example.org", names[id % 7], id % 1000);
    m.sender.assign(buf);
    std::snprintf(buf, sizeof buf, "%s.%lld@example.net", names[(id + 3) % 7], (id * 7) % 1000);
    m.receiver.assign(buf);
    m.status = static_cast<platform::Delivery>(id % 3);
    m.latency_us = 100 + id % 900;
    std::snprintf(buf, sizeof buf,
                  "message %lld in conversation %lld: the quick brown fox jumps over the lazy "
                  "dog, and the audit trail records it in full %04lld",
                  id, id / 7, id % 10000);
    m.payload.assign(buf);

    const bool steady = i >= warmup;
    const bool sampled = i % sample_every == 0;
    const std::size_t allocs_before = steady ? auditpipe::tools::allocations_on_this_thread() : 0;
    const auto t0 = sampled ? Clock::now() : Clock::time_point{};
    const auditpipe::Status s = logger.log(m);
    if (sampled) {
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
      out.latency_ns.push_back(static_cast<std::uint32_t>(std::min<long long>(ns, UINT32_MAX)));
    }
    if (steady) {
      out.steady_allocations += auditpipe::tools::allocations_on_this_thread() - allocs_before;
      ++out.steady_records;
    }
    if (s != auditpipe::Status::ok) ++out.not_ok;
  }
}

std::string with_commas(long long v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse(argc, argv);
  const std::string table(auditpipe::table_of<platform::AuditRow>.name);

  auditpipe::Options options;
  options.capacity = cfg.capacity;
  options.batch_size = std::min(cfg.batch, cfg.capacity);
  options.writers = cfg.writers;
  options.overflow = cfg.overflow;
  options.max_wait = std::chrono::milliseconds(cfg.max_wait_ms);

  // This run's sources, chosen here (as the library would, at random) so
  // that the check below counts this run's rows only, whoever else writes
  // the table meanwhile.
  std::random_device device;
  const std::uint64_t bits = (static_cast<std::uint64_t>(device()) << 32) | device();
  const std::int64_t base = static_cast<std::int64_t>((bits & ((std::uint64_t{1} << 46) - 1)) | 1)
                            << 16;
  options.source_id_base = base;

  std::vector<WorkerResult> results(static_cast<std::size_t>(cfg.threads));
  platform::RowCount landed;
  auditpipe::CloseReport report;
  double seconds = 0;
  try {
    auditpipe::Logger<platform::AuditRow> logger(auditpipe::open(cfg.url), options);
    const auto t0 = Clock::now();
    std::vector<std::thread> workers;
    const long long per = cfg.messages / cfg.threads;
    const long long extra = cfg.messages % cfg.threads;
    long long first = 0;
    for (int w = 0; w < cfg.threads; ++w) {
      const long long count = per + (w < extra ? 1 : 0);
      workers.emplace_back(work, std::ref(logger), w, first, count,
                           std::ref(results[static_cast<std::size_t>(w)]));
      first += count;
    }
    for (auto& t : workers) t.join();
    report = logger.close();
    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    landed = platform::count_rows(cfg.url, table, base);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "message_platform: %s\n", e.what());
    return 1;
  }

  std::vector<std::uint32_t> samples;
  std::size_t steady_records = 0, steady_allocations = 0, not_ok = 0;
  for (const auto& r : results) {
    samples.insert(samples.end(), r.latency_ns.begin(), r.latency_ns.end());
    steady_records += r.steady_records;
    steady_allocations += r.steady_allocations;
    not_ok += r.not_ok;
  }
  std::sort(samples.begin(), samples.end());
  auto pct = [&](double q) -> long long {
    if (samples.empty()) return 0;
    return samples[std::min(samples.size() - 1,
                            static_cast<std::size_t>(q * static_cast<double>(samples.size())))];
  };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  const auto& s = report.stats;
  const long long rows = landed.rows;
  const long long keys = landed.distinct_keys;
  const long long produced = cfg.messages;
  const bool all_landed = rows == produced && keys == produced;
  // Under drop/fail (or a wait that timed out) fewer than produced are
  // stored, each of the rest counted below: the table must hold exactly
  // the records the counters call written, each once.
  const long long written = static_cast<long long>(s.written);
  const bool written_landed = rows == written && keys == written;
  std::printf("auditpipe message_platform report\n");
  std::printf("  database             %s (table %s)\n", auditpipe::redact_url(cfg.url).c_str(),
              table.c_str());
  std::printf(
      "  workers / writers    %d / %u   capacity %zu, batch %zu, overflow %s, max_wait %lld ms\n",
      cfg.threads, cfg.writers, options.capacity, options.batch_size,
      std::string(auditpipe::to_string(cfg.overflow)).c_str(), cfg.max_wait_ms);
  std::printf("  records produced     %s\n", with_commas(produced).c_str());
  const std::string verdict =
      all_landed       ? "[every record landed exactly once]"
      : written_landed ? "[every written record landed exactly once; the rest counted below]"
                       : "[MISMATCH: the counters say " + with_commas(written) + " written]";
  std::printf("  rows written (query) %s   distinct (source_id, seq) %s   %s\n",
              with_commas(rows).c_str(), with_commas(keys).c_str(), verdict.c_str());
  std::printf("  wall time            %.3f s\n", seconds);
  std::printf("  throughput           %s records/s stored\n",
              with_commas(static_cast<long long>(static_cast<double>(rows) / seconds)).c_str());
  std::printf(
      "  hot path log()       p50 %s ns   p99 %s ns   p99.9 %s ns   (1 in %d calls sampled, %s "
      "samples)\n",
      with_commas(pct(0.50)).c_str(), with_commas(pct(0.99)).c_str(),
      with_commas(pct(0.999)).c_str(), sample_every,
      with_commas(static_cast<long long>(samples.size())).c_str());
  std::printf(
      "  allocations/record   %.4f   (%zu operator new calls in %zu steady-state log() calls)\n",
      steady_records ? static_cast<double>(steady_allocations) / static_cast<double>(steady_records)
                     : 0.0,
      steady_allocations, steady_records);
  std::printf(
      "  not written          dropped %s   timed out %s   pool exhausted %s   refused by the "
      "database %s   unwritten %s\n",
      with_commas(static_cast<long long>(s.dropped)).c_str(),
      with_commas(static_cast<long long>(s.timed_out)).c_str(),
      with_commas(static_cast<long long>(s.pool_exhausted)).c_str(),
      with_commas(static_cast<long long>(s.rejected_by_sink)).c_str(),
      with_commas(static_cast<long long>(s.unwritten)).c_str());
  std::printf("  blocked acquires     %s   longest wait %.3f ms   p99 wait %.3f ms\n",
              with_commas(static_cast<long long>(s.blocked)).c_str(),
              static_cast<double>(s.producer_wait_ns.max) / 1e6,
              static_cast<double>(s.producer_wait_ns.quantile(0.99)) / 1e6);
  std::printf("  batches              %s   mean %.0f records   write p50 %.2f ms   p99 %.2f ms\n",
              with_commas(static_cast<long long>(s.batches)).c_str(), s.batch_size.mean(),
              static_cast<double>(s.write_latency_us.quantile(0.5)) / 1e3,
              static_cast<double>(s.write_latency_us.quantile(0.99)) / 1e3);
  std::printf("  write failures       %s   retries %s\n",
              with_commas(static_cast<long long>(s.write_failures)).c_str(),
              with_commas(static_cast<long long>(s.retries)).c_str());
  std::printf("  peak RSS             %.1f MB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);

  // With the default policy nothing may be missing; with drop/fail the
  // report must still account for every record.
  const bool accounted =
      static_cast<long long>(s.written + s.dropped + s.timed_out + s.pool_exhausted +
                             s.rejected_by_sink + s.unwritten) == produced;
  if (cfg.overflow == auditpipe::Overflow::block && s.timed_out == 0) return all_landed ? 0 : 3;
  return written_landed && accounted &&
                 not_ok == static_cast<std::size_t>(s.dropped + s.timed_out + s.pool_exhausted)
             ? 0
             : 3;
}
