// Progress: the line `auditpipe ingest` keeps on stderr while it loads. On
// a terminal it is redrawn in place five times a second (bytes and records
// done of the total, rows/s, ETA, rejects, retries, the database's
// health); anywhere else a plain line every few seconds, so a log file gets
// a readable history instead of carriage returns.
//
// Who may call: the loader (start, stop); the display thread calls the
// sampler.
//
// Thread safety: start/stop from one thread; the sampler is called from the
// display thread and must be safe to call concurrently with the load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace auditpipe::ingest {

/// What the display shows, sampled by the loader.
struct ProgressSample {
  std::uint64_t input_bytes = 0;             ///< read of the inputs (compressed bytes)
  std::optional<std::uint64_t> input_total;  ///< their sizes, when all are known
  std::uint64_t records = 0;                 ///< committed this run
  std::uint64_t written = 0;                 ///< stored this run
  std::uint64_t rejects = 0;                 ///< this run
  std::uint64_t retries = 0;                 ///< sink writes repeated
  std::string health = "ok";                 ///< the database's (Stats::health)
};

class Progress {
 public:
  enum class Mode { terminal, plain, none };

  /// Mode::terminal when `out` is a terminal, else plain (none when quiet).
  static Mode mode_for(std::FILE* out, bool quiet);

  Progress(std::FILE* out, Mode mode, std::function<ProgressSample()> sample,
           std::chrono::milliseconds plain_interval = std::chrono::seconds(5));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Ends the display (a terminal's line is finished with a newline).
  void stop();

  /// One progress line for `s`, `elapsed` into the load (no line end).
  static std::string format(const ProgressSample& s, std::chrono::duration<double> elapsed);

 private:
  void run();

  std::FILE* out_;
  const Mode mode_;
  const std::function<ProgressSample()> sample_;
  const std::chrono::milliseconds interval_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

/// `n` with thousands separators: 1,234,567.
std::string with_commas(std::uint64_t n);
/// `bytes` in B, kB, MB, GB (powers of 1000, one decimal).
std::string human_bytes(std::uint64_t bytes);

}  // namespace auditpipe::ingest
