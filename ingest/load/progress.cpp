// See progress.h.
#include "progress.h"

#include <unistd.h>

#include <cmath>

namespace auditpipe::ingest {

std::string with_commas(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  const std::size_t first = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  out.append(digits, 0, first);
  for (std::size_t i = first; i < digits.size(); i += 3) {
    out += ',';
    out.append(digits, i, 3);
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1000.0 && u + 1 < std::size(units)) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

namespace {
std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}
}  // namespace

std::string Progress::format(const ProgressSample& s, std::chrono::duration<double> elapsed) {
  const double secs = std::max(elapsed.count(), 1e-3);
  std::string line;
  if (s.input_total && *s.input_total > 0) {
    const double frac = std::min(1.0, static_cast<double>(s.input_bytes) / *s.input_total);
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3.0f%%", std::floor(frac * 100.0));
    line += pct;
    line += "  " + human_bytes(s.input_bytes) + " / " + human_bytes(*s.input_total);
  } else {
    line += human_bytes(s.input_bytes) + " read";
  }
  line += "  " + with_commas(s.written) + " rows written";
  line += "  " + with_commas(static_cast<std::uint64_t>(s.written / secs)) + " rows/s";
  if (s.input_total && *s.input_total > 0 && s.input_bytes > 0) {
    const double rate = s.input_bytes / secs;
    const double left =
        static_cast<double>(*s.input_total - std::min(*s.input_total, s.input_bytes));
    line += "  ETA " + clock_text(left / rate);
  }
  line += "  rejects " + with_commas(s.rejects);
  line += "  retries " + with_commas(s.retries);
  line += "  db " + s.health;
  return line;
}

Progress::Mode Progress::mode_for(std::FILE* out, bool quiet) {
  if (quiet) return Mode::none;
  return ::isatty(fileno(out)) ? Mode::terminal : Mode::plain;
}

Progress::Progress(std::FILE* out, Mode mode, std::function<ProgressSample()> sample,
                   std::chrono::milliseconds plain_interval)
    : out_(out),
      mode_(mode),
      sample_(std::move(sample)),
      interval_(mode == Mode::terminal ? std::chrono::milliseconds(200) : plain_interval) {
  if (mode_ != Mode::none) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  stop();
}

void Progress::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Progress::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const bool stopping = wake_.wait_for(lock, interval_, [this] { return stopping_; });
    const std::string line = format(sample_(), std::chrono::steady_clock::now() - started_);
    if (mode_ == Mode::terminal) {
      // \r and "erase to end of line": the line is redrawn where it was.
      std::fprintf(out_, "\r\033[K%s", line.c_str());
      if (stopping) std::fputc('\n', out_);
    } else if (!stopping) {
      std::fprintf(out_, "auditpipe ingest: %s\n", line.c_str());
    }
    std::fflush(out_);
    if (stopping) break;
  }
}

}  // namespace auditpipe::ingest
