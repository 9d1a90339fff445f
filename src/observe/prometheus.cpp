#include "auditpipe/prometheus.h"

#include <cinttypes>
#include <cstdio>

#include "auditpipe/status.h"

namespace auditpipe {

namespace {

bool valid_label_name(std::string_view n) {
  if (n.empty() || n.substr(0, 2) == "__") return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// `name="value",...` with \, " and newline escaped, as the format requires.
std::string render_labels(const MetricLabels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!valid_label_name(name))
      throw error("auditpipe: '" + name + "' is not a valid Prometheus label name");
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

class Writer {
 public:
  explicit Writer(std::string labels) : labels_(std::move(labels)) {}

  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view extra, double value) {
    out_ += name;
    if (!labels_.empty() || !extra.empty()) {
      out_ += '{';
      out_ += labels_;
      if (!labels_.empty() && !extra.empty()) out_ += ',';
      out_ += extra;
      out_ += '}';
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, " %.17g\n", value);
    out_ += buf;
  }
  void counter(const char* name, const char* help, std::uint64_t value) {
    family(name, "counter", help);
    sample(name, "", static_cast<double>(value));
  }
  void gauge(const char* name, const char* help, double value) {
    family(name, "gauge", help);
    sample(name, "", value);
  }
  // Cumulative buckets at 2^k - 1 raw units for k in [first, last], scaled
  // by `unit` (e.g. 1e-9 for nanoseconds into seconds).
  void histogram(const char* name, const char* help, const HistogramSnapshot& h, int first,
                 int last, double unit) {
    family(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    std::size_t b = 0;
    for (int k = first; k <= last; ++k) {
      const std::uint64_t le = (std::uint64_t{1} << k) - 1;
      while (b < h.buckets.size() && histogram_bucket_upper(b) <= le) cumulative += h.buckets[b++];
      char extra[48];
      std::snprintf(extra, sizeof extra, "le=\"%.17g\"", static_cast<double>(le) * unit);
      sample(bucket, extra, static_cast<double>(cumulative));
    }
    sample(bucket, "le=\"+Inf\"", static_cast<double>(h.count));
    sample(std::string(name) + "_sum", "", static_cast<double>(h.sum) * unit);
    sample(std::string(name) + "_count", "", static_cast<double>(h.count));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string to_prometheus(const Stats& s, const MetricLabels& labels) {
  Writer w(render_labels(labels));
  w.counter("auditpipe_records_committed_total", "Records whose commit() returned ok.",
            s.committed);
#define AUDITPIPE_STATS_METRIC(field, metric, meaning) w.counter(metric, meaning, s.field);
  AUDITPIPE_STATS_COUNTERS(AUDITPIPE_STATS_METRIC)
#undef AUDITPIPE_STATS_METRIC
  w.gauge("auditpipe_pool_capacity_records", "Slots in the record pool.",
          static_cast<double>(s.pool_capacity));
  w.gauge("auditpipe_pool_in_use_records", "Slots filling, queued or being written.",
          static_cast<double>(s.pool_in_use));
  w.gauge("auditpipe_pool_cached_records", "Free slots parked in producer threads' magazines.",
          static_cast<double>(s.pool_cached));
  w.gauge("auditpipe_spill_bytes", "Bytes in the spill directory.",
          static_cast<double>(s.spill_bytes));
  w.gauge("auditpipe_spill_records", "Records in the spill directory, waiting to be written.",
          static_cast<double>(s.spill_records));
  w.family("auditpipe_health", "gauge", "1 for the current health state of the sink's database.");
  for (Health h : {Health::ok, Health::degraded, Health::down}) {
    w.sample("auditpipe_health", "state=\"" + std::string(to_string(h)) + "\"",
             s.health == h ? 1 : 0);
  }
  w.histogram("auditpipe_batch_size_records", "Records per stored batch.", s.batch_size, 1, 20,
              1.0);
  w.histogram("auditpipe_write_duration_seconds", "Duration of successful sink writes.",
              s.write_latency_us, 7, 27, 1e-6);
  w.histogram("auditpipe_producer_wait_seconds", "Time producers waited for a slot (blocked ones).",
              s.producer_wait_ns, 10, 37, 1e-9);
  if (s.connection_pool) {
    const auto& p = *s.connection_pool;
    w.gauge("auditpipe_connection_pool_active_connections", "Connections lent out.",
            static_cast<double>(p.active));
    w.gauge("auditpipe_connection_pool_idle_connections", "Open connections waiting to be lent.",
            static_cast<double>(p.idle));
    w.gauge("auditpipe_connection_pool_waiting_borrowers", "Borrowers waiting for a connection.",
            static_cast<double>(p.waiting));
    w.counter("auditpipe_connection_pool_created_total", "Connections opened.", p.created);
    w.counter("auditpipe_connection_pool_closed_total", "Connections closed.", p.closed);
    w.counter("auditpipe_connection_pool_timeouts_total",
              "Leases that gave up after connection_timeout.", p.timeouts);
    w.counter("auditpipe_connection_pool_connect_failures_total", "Connects that failed.",
              p.connect_failures);
    w.histogram("auditpipe_connection_pool_wait_seconds", "Time spent waiting for a lease.",
                p.wait_ns, 10, 37, 1e-9);
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
