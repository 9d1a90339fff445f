#include "auditpipe/prometheus.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>
#include <vector>

#include "auditpipe/status.h"
#include "auditpipe/utf8.h"
#include "auditpipe/version.h"

namespace auditpipe {

namespace {

// The version auditpipe_build_info reports: CMake's PROJECT_VERSION, given
// to this file alone (src/CMakeLists.txt).
constexpr std::string_view build_version = AUDITPIPE_VERSION;

// Label names the page adds itself: a caller's label of the same name
// would make two labels of one name on a series (which Prometheus refuses,
// page and all) or change what the page's own label means.
constexpr std::string_view page_label_names[] = {"le", "state", "version"};

[[noreturn]] void bad_label(std::string_view name, const std::string& why) {
  throw error("auditpipe: to_prometheus: label '" + std::string(name) + "' " + why);
}

// Why `n` cannot be a label name, or nothing.
std::string label_name_problem(std::string_view n) {
  if (n.empty()) return "is empty (a label name matches [a-zA-Z_][a-zA-Z0-9_]*)";
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return "is not a valid label name (a label name matches [a-zA-Z_][a-zA-Z0-9_]*)";
  }
  if (n.substr(0, 2) == "__") return "starts with '__', which Prometheus reserves for itself";
  for (std::string_view used : page_label_names) {
    if (n == used) {
      return "is a label the page itself uses (le, state, version); choose another name";
    }
  }
  return {};
}

// `name="value",...` with \, " and newline escaped, as the format requires;
// throws auditpipe::error for a label Prometheus would refuse the page for.
std::string render_labels(const MetricLabels& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const auto& [name, value] = labels[i];
    if (const std::string problem = label_name_problem(name); !problem.empty()) {
      bad_label(name, problem);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[j].first == name) bad_label(name, "is given twice");
    }
    if (!is_valid_utf8(value)) bad_label(name, "has a value that is not valid UTF-8");
    if (!out.empty()) out += ',';
    out += name + "=\"";
    for (char c : value) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '"')
        out += "\\\"";
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    out += '"';
  }
  return out;
}

// `v` / 10^decimals, written exactly as a decimal ("0.000255" for 255
// microseconds in seconds): no binary rounding, no exponent.
std::string scaled_decimal(std::uint64_t v, int decimals) {
  std::string digits = std::to_string(v);
  if (decimals == 0) return digits;
  const auto d = static_cast<std::size_t>(decimals);
  if (digits.size() <= d) digits.insert(0, d + 1 - digits.size(), '0');
  digits.insert(digits.size() - d, 1, '.');
  while (digits.back() == '0') digits.pop_back();
  if (digits.back() == '.') digits.pop_back();
  return digits;
}

// Builds one page: families in the order first named, each with its HELP
// and TYPE once and the samples of every logger written into it, so that
// several loggers share one page (set_labels between them).
class Writer {
 public:
  void set_labels(std::string labels) { labels_ = std::move(labels); }

  void family(const char* name, const char* type, const char* help) {
    for (std::size_t i = 0; i < families_.size(); ++i) {
      if (families_[i].name == name) {
        current_ = i;
        return;
      }
    }
    std::string head = "# HELP ";
    head += name;
    head += ' ';
    head += help;
    head += "\n# TYPE ";
    head += name;
    head += ' ';
    head += type;
    head += '\n';
    families_.push_back({name, std::move(head)});
    current_ = families_.size() - 1;
  }
  void sample(std::string_view name, std::string_view extra, std::string_view value) {
    std::string& out = families_[current_].text;
    out += name;
    if (!labels_.empty() || !extra.empty()) {
      out += '{';
      out += labels_;
      if (!labels_.empty() && !extra.empty()) out += ',';
      out += extra;
      out += '}';
    }
    out += ' ';
    out += value;
    out += '\n';
  }
  void sample(std::string_view name, std::string_view extra, std::uint64_t value) {
    sample(name, extra, std::to_string(value));
  }
  void counter(const char* name, const char* help, std::uint64_t value) {
    family(name, "counter", help);
    sample(name, "", value);
  }
  void gauge(const char* name, const char* help, std::uint64_t value) {
    family(name, "gauge", help);
    sample(name, "", value);
  }
  // A gauge of `raw` units of 10^-decimals (exact, as histogram bounds).
  void gauge_scaled(const char* name, const char* help, std::uint64_t raw, int decimals) {
    family(name, "gauge", help);
    sample(name, "", scaled_decimal(raw, decimals));
  }
  // Cumulative buckets at 2^k - 1 raw units for k in [first, last]; a raw
  // unit is 10^-decimals of the metric's unit (9 for nanoseconds into
  // seconds), so bounds and sum are written as exact decimals.
  void histogram(const char* name, const char* help, const HistogramSnapshot& h, int first,
                 int last, int decimals) {
    family(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    std::size_t b = 0;
    for (int k = first; k <= last; ++k) {
      const std::uint64_t le = (std::uint64_t{1} << k) - 1;
      while (b < h.buckets.size() && histogram_bucket_upper(b) <= le) cumulative += h.buckets[b++];
      sample(bucket, "le=\"" + scaled_decimal(le, decimals) + "\"", cumulative);
    }
    sample(bucket, "le=\"+Inf\"", h.count);
    sample(std::string(name) + "_sum", "", scaled_decimal(h.sum, decimals));
    sample(std::string(name) + "_count", "", h.count);
  }
  std::string take() {
    std::string page;
    for (const Family& f : families_) page += f.text;
    return page;
  }

 private:
  struct Family {
    std::string name;
    std::string text;  // HELP, TYPE, then the samples
  };
  std::string labels_;
  std::vector<Family> families_;
  std::size_t current_ = 0;
};

// One logger's series, with the labels the writer was last given.
void write_stats(Writer& w, const Stats& s) {
  w.family("auditpipe_build_info", "gauge", "Always 1; the version label is auditpipe's.");
  w.sample("auditpipe_build_info", "version=\"" + std::string(build_version) + "\"",
           std::uint64_t{1});
  w.counter("auditpipe_records_committed_total", "Records whose commit() returned ok.",
            s.committed);
#define AUDITPIPE_STATS_METRIC(field, metric, meaning) w.counter(metric, meaning, s.field);
  AUDITPIPE_STATS_COUNTERS(AUDITPIPE_STATS_METRIC)
#undef AUDITPIPE_STATS_METRIC
  w.gauge("auditpipe_pool_capacity_records", "Slots in the record pool.", s.pool_capacity);
  w.gauge("auditpipe_pool_in_use_records", "Slots filling, queued or being written.",
          s.pool_in_use);
  w.gauge("auditpipe_pool_cached_records", "Free slots parked in producer threads' magazines.",
          s.pool_cached);
  w.gauge("auditpipe_spill_bytes", "Bytes in the spill directory.", s.spill_bytes);
  w.gauge("auditpipe_spill_records", "Records in the spill directory, waiting to be written.",
          s.spill_records);
  w.gauge_scaled("auditpipe_producer_max_wait_seconds",
                 "Options::max_wait: the longest a producer waits for a slot.", s.max_wait_ns, 9);
  w.family("auditpipe_health", "gauge", "1 for the current health state of the sink's database.");
  for (Health h : {Health::ok, Health::degraded, Health::down}) {
    w.sample("auditpipe_health", "state=\"" + std::string(to_string(h)) + "\"",
             std::uint64_t{s.health == h ? 1u : 0u});
  }
  w.histogram("auditpipe_batch_size_records", "Records per stored batch.", s.batch_size, 1, 20, 0);
  w.histogram("auditpipe_write_duration_seconds", "Duration of successful sink writes.",
              s.write_latency_us, 7, 27, 6);
  w.histogram("auditpipe_producer_wait_seconds", "Time producers waited for a slot (blocked ones).",
              s.producer_wait_ns, 10, 37, 9);
  if (s.connection_pool) {
    const auto& p = *s.connection_pool;
    w.gauge("auditpipe_connection_pool_active_connections", "Connections lent out.", p.active);
    w.gauge("auditpipe_connection_pool_idle_connections", "Open connections waiting to be lent.",
            p.idle);
    w.gauge("auditpipe_connection_pool_waiting_borrowers", "Borrowers waiting for a connection.",
            p.waiting);
    w.counter("auditpipe_connection_pool_created_total", "Connections opened.", p.created);
    w.counter("auditpipe_connection_pool_closed_total", "Connections closed.", p.closed);
    w.counter("auditpipe_connection_pool_timeouts_total",
              "Leases that gave up after connection_timeout.", p.timeouts);
    w.counter("auditpipe_connection_pool_connect_failures_total", "Connects that failed.",
              p.connect_failures);
    w.histogram("auditpipe_connection_pool_wait_seconds", "Time spent waiting for a lease.",
                p.wait_ns, 10, 37, 9);
    // Which server (cluster node) the open connections are on.
    std::vector<std::pair<std::string, std::uint64_t>> per_server;
    for (const std::string& server : p.servers) {
      if (server.empty()) continue;
      if (per_server.empty() || per_server.back().first != server) {
        per_server.emplace_back(server, 0);
      }
      ++per_server.back().second;
    }
    if (!per_server.empty()) {
      w.family("auditpipe_connection_pool_server_connections", "gauge",
               "Open connections per server (node) they are connected to.");
      for (const auto& [server, n] : per_server) {
        w.sample("auditpipe_connection_pool_server_connections",
                 render_labels({{"db_server", server}}), n);
      }
    }
  }
  if (s.seals) {
    w.gauge("auditpipe_seal_chain_length",
            "seal_no of the newest seal stored in the table's chain: what an anchor taken now "
            "names; verify finding fewer seals means the tail was cut.",
            s.seals->newest);
    w.counter("auditpipe_seals_stored_total", "Seals this process stored.", s.seals->stored);
    w.gauge("auditpipe_seals_pending", "Seals of stored batches not stored yet.", s.seals->pending);
  }
}

// The labels as a set, so that {a, b} and {b, a} compare equal.
MetricLabels sorted(MetricLabels labels) {
  std::sort(labels.begin(), labels.end());
  return labels;
}

std::string describe(const MetricLabels& labels) {
  if (labels.empty()) return "no labels";
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ',';
    out += name + "=\"" + value + "\"";
  }
  return out + "}";
}

}  // namespace

std::string to_prometheus(const Stats& s, const MetricLabels& labels) {
  Writer w;
  w.set_labels(render_labels(labels));
  write_stats(w, s);
  return w.take();
}

std::string to_prometheus(const std::vector<LabeledStats>& loggers) {
  // All labels checked before anything is written: one bad set refuses
  // the page, never a page with a logger missing.
  std::vector<std::string> rendered;
  std::vector<MetricLabels> sets;
  rendered.reserve(loggers.size());
  for (std::size_t i = 0; i < loggers.size(); ++i) {
    rendered.push_back(render_labels(loggers[i].labels));
    sets.push_back(sorted(loggers[i].labels));
    for (std::size_t j = 0; j < i; ++j) {
      if (sets[j] == sets[i]) {
        throw error("auditpipe: to_prometheus: loggers " + std::to_string(j) + " and " +
                    std::to_string(i) + " both have " + describe(loggers[i].labels) +
                    "; give each logger a distinct label set (e.g. logger=\"orders\"), or "
                    "their series collide");
      }
    }
  }
  Writer w;
  for (std::size_t i = 0; i < loggers.size(); ++i) {
    w.set_labels(std::move(rendered[i]));
    write_stats(w, loggers[i].stats);
  }
  return w.take();
}

std::string summary_line(const Stats& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "auditpipe: health %s; committed %" PRIu64 ", written %" PRIu64 ", in pool %" PRIu64
                "/%" PRIu64 ", spilled %" PRIu64 " (replayed %" PRIu64 "), dropped %" PRIu64
                ", timed out %" PRIu64 ", refused %" PRIu64 ", batches %" PRIu64
                ", write p99 %.2f ms, write failures %" PRIu64,
                std::string(to_string(s.health)).c_str(), s.committed, s.written, s.pool_in_use,
                s.pool_capacity, s.spilled, s.replayed, s.dropped, s.timed_out, s.rejected_by_sink,
                s.batches, static_cast<double>(s.write_latency_us.quantile(0.99)) / 1000.0,
                s.write_failures);
  return buf;
}

}  // namespace auditpipe
