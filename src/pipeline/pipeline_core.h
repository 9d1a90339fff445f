// PipelineCore: the state that the producer path, the writers and
// flush/close share. Internal to the core library.
//
// Thread safety: members are atomics or synchronize internally; the
// lifecycle flags only ever go from false to true.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/histogram.h"
#include "auditpipe/options.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/stats.h"
#include "common/descriptor_fingerprint.h"
#include "durable/dead_letter_file.h"
#include "durable/spill_writer.h"
#include "producer/record_pool.h"
#include "producer/record_queue.h"
#include "producer/writer_signal.h"

namespace auditpipe::internal {

struct Counters {
  // Bumped by producers, on slow paths only.
  alignas(64) std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> pool_exhausted{0};
  std::atomic<std::uint64_t> abandoned{0};
  std::atomic<std::uint64_t> blocked{0};
  std::atomic<std::uint64_t> spilled{0};
  std::atomic<std::uint64_t> spill_refused{0};
  // Bumped by writers, once per batch.
  alignas(64) std::atomic<std::uint64_t> written{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> write_failures{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> rejected_by_sink{0};
  std::atomic<std::uint64_t> truncated_fields{0};
  std::atomic<std::uint64_t> invalid_utf8_fields{0};
  std::atomic<std::uint64_t> nul_replaced_fields{0};
  std::atomic<std::uint64_t> unwritten{0};
  std::atomic<std::uint64_t> dead_lettered{0};
  std::atomic<std::uint64_t> recovered{0};
  std::atomic<std::uint64_t> replayed{0};
  std::atomic<std::uint64_t> spill_skipped_bytes{0};
  std::atomic<std::uint64_t> spill_damaged_regions{0};
  std::atomic<std::uint64_t> spill_bad_segments{0};
  // Failed writes since the last successful one (any writer): the health.
  std::atomic<std::uint32_t> consecutive_failures{0};
  Histogram batch_size;
  Histogram write_latency_us;
  Histogram producer_wait_ns;
};

struct PipelineCore {
  using clock = std::chrono::steady_clock;

  PipelineCore(const TableDescriptor& table_, std::shared_ptr<Sink> sink_, const Options& options_)
      : table(table_),
        options(options_),
        sink(std::move(sink_)),
        durable{options.durable_path, fingerprint(table)},
        pool(options.capacity, table.record_size, table.record_align, table.prototype,
             options.durable_path.empty() ? nullptr : &durable),
        // Blocks for every slot up front, plus a spare block per writer and
        // a few producers. A producer token keeps every block it has used
        // (moodycamel's explicit producers never return them), so as the
        // producers' shares of the pool shift, each token's ring can grow
        // towards the pool's capacity: at most ~10.5 bytes per slot per
        // producer source, allocated while warming up, never per record.
        queue(options.capacity + 32 * (options.writers + 8)) {
    for (const Column& c : table.columns) {
      if (c.type == ColumnType::timestamp) timestamp_columns.push_back(&c);
    }
    if (!options.spill_path.empty()) {
      spill =
          std::make_unique<SpillWriter>(options.spill_path, fingerprint(table), table.record_size,
                                        options.spill_max_bytes, options.spill_segment_bytes);
    }
    if (!options.dead_letter_path.empty()) {
      dead_letters = std::make_unique<DeadLetterFile>(options.dead_letter_path);
    }
  }

  // Writers call this after each batch; flush/close wait on it.
  void notify_progress() {
    { std::lock_guard<std::mutex> lock(progress_mutex); }
    progress_cv.notify_all();
  }
  void wait_progress(clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(progress_mutex);
    progress_cv.wait_until(lock, deadline);
  }

  // Backoff sleep of a writer; ends early only when close() gives up.
  void sleep_unless_giving_up(clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(give_up_mutex);
    give_up_cv.wait_until(lock, deadline, [&] { return give_up.load(std::memory_order_relaxed); });
  }
  void declare_give_up() {
    {
      std::lock_guard<std::mutex> lock(give_up_mutex);
      give_up.store(true, std::memory_order_relaxed);
    }
    give_up_cv.notify_all();
  }

  const TableDescriptor& table;
  std::vector<const Column*> timestamp_columns;  // those fast_now() readings may be in
  const Options options;
  const std::shared_ptr<Sink> sink;
  const DurableStorage durable;
  RecordPool pool;
  RecordQueue queue;
  std::unique_ptr<SpillWriter> spill;            // with a spill directory
  std::unique_ptr<DeadLetterFile> dead_letters;  // with a dead-letter file
  std::function<Stats()> stats;                  // the pipeline's stats(), for the summary
  WriterSignal signal;
  Counters counters;

  std::atomic<bool> closing{false};      // acquire() refuses new records
  std::atomic<bool> give_up{false};      // close() ran out of time: stop retrying
  std::atomic<bool> stopping{false};     // writers exit once they hold nothing
  std::atomic<bool> stopped{false};      // writers are gone: commit() refuses
  std::atomic<std::uint32_t> urgent{0};  // flush/close waiting: no holding partial batches

  std::mutex progress_mutex;
  std::condition_variable progress_cv;
  std::mutex give_up_mutex;
  std::condition_variable give_up_cv;
};

}  // namespace auditpipe::internal
