#include "auditpipe/pipeline.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "common/tsc_clock.h"
#include "durable/pool_file.h"
#include "durable/spill_format.h"
#include "pipeline/pipeline_core.h"
#include "producer/producer_registry.h"
#include "writer/batch_writer.h"

namespace auditpipe {

namespace {

using internal::PipelineCore;
using internal::SlotHeader;
using internal::SlotState;

// The options with their automatic values (0 = let auditpipe choose) filled
// in, then checked.
Options resolve(const TableDescriptor& table, const Sink* sink, Options o) {
  auto fail = [](const std::string& what) { throw error("auditpipe: invalid options: " + what); };
  if (sink == nullptr) fail("no sink given");
  if (o.writers == 0) o.writers = std::max(1u, sink->preferred_writers());
  if (o.batch_size == 0) o.batch_size = std::clamp<std::size_t>(o.capacity / 8, 1, 5000);
  if (table.columns.empty()) fail("the table has no columns");
  if (o.capacity == 0) fail("capacity must be at least 1");
  if (o.batch_size > o.capacity) {
    fail("batch_size (" + std::to_string(o.batch_size) + ") must not exceed capacity (" +
         std::to_string(o.capacity) + "): a batch is taken from the pool's records");
  }
  if (o.writers == 0 || o.writers > 256) fail("writers must be between 1 and 256");
  if (o.flush_interval.count() <= 0) fail("flush_interval must be positive");
  if (o.max_wait.count() < 0) fail("max_wait must not be negative");
  if (o.close_timeout.count() < 0) fail("close_timeout must not be negative");
  if (o.retry_backoff_initial.count() <= 0 || o.retry_backoff_max < o.retry_backoff_initial) {
    fail("retry backoff must be positive, with the cap not below the first delay");
  }
  if (o.overflow == Overflow::spill && o.spill_path.empty()) {
    fail("overflow = spill needs a spill_path (a directory for the records that do not fit)");
  }
  if (o.summary_interval.count() < 0) fail("summary_interval must not be negative");
  if (!o.spill_path.empty() && o.spill_fsync_interval.count() <= 0) {
    fail("spill_fsync_interval must be positive");
  }
  return o;
}

// A record handed out when the pool is full under Overflow::spill lives in
// its source's own buffer, behind this header.
struct SpillRecordHeader {
  internal::Producer* producer;
};
constexpr std::size_t spill_record_offset(std::size_t align) {
  return (sizeof(SpillRecordHeader) + std::max<std::size_t>(align, 64) - 1) /
         std::max<std::size_t>(align, 64) * std::max<std::size_t>(align, 64);
}

}  // namespace

class Pipeline::Impl {
 public:
  Impl(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options)
      : core_(table, std::move(sink), options),
        registry_(std::make_shared<internal::ProducerRegistry>(core_.queue, options.source_id_base,
                                                               core_.pool.source_table())),
        spill_offset_(spill_record_offset(table.record_align)) {
    // Open before accepting anything: a bad URL, a missing table or wrong
    // credentials fail here, not at the first batch.
    core_.sink->open(table, SinkContext{options.writers});
    // Records a killed process had committed into the durable pool are
    // queued before anything new, so they are written first.
    const auto recovered = core_.pool.take_recovered();
    if (!recovered.empty()) {
      resolve_recovered_timestamps(recovered);
      moodycamel::ProducerToken token(core_.queue);
      for (SlotHeader* s : recovered) core_.queue.enqueue(token, s);
      core_.counters.recovered.store(recovered.size(), std::memory_order_relaxed);
      diagnostics()->info("auditpipe: {} committed records recovered from {}; writing them first",
                          recovered.size(), options.durable_path.string());
    }
    // From here on the file holds this boot's calibration (the writer
    // refreshes it): records committed from now on can be read after a
    // reboot.
    if (core_.pool.file() != nullptr && !core_.timestamp_columns.empty() &&
        timestamp::fast_now_reads_tsc()) {
      core_.pool.file()->save_clock(internal::TscClock::snapshot());
    }
    core_.stats = [this] { return stats(); };
    writers_.reserve(options.writers);
    for (unsigned i = 0; i < options.writers; ++i) {
      writers_.push_back(std::make_unique<internal::BatchWriter>(core_, i));
    }
  }

  ~Impl() {
    close(clock::now() + core_.options.close_timeout);
    // Tokens refer to the queue: destroy them while it still exists.
    registry_->shutdown();
  }

  std::byte* acquire(Status* status) noexcept {
    // Behind anyone already waiting: queue up rather than overtake them.
    SlotHeader* s = core_.pool.waiters() == 0 ? core_.pool.try_acquire() : nullptr;
    if (s == nullptr) {
      if (core_.options.overflow == Overflow::spill &&
          !core_.closing.load(std::memory_order_acquire)) {
        if (std::byte* r = spill_record()) return r;
      }
      s = acquire_slow(status);
      if (s == nullptr) return nullptr;
    }
    // Checked after taking the slot (pairs with close(), which sets the flag
    // and then reads the pool): either this sees closing, or close() sees
    // the slot in use and waits for it.
    if (core_.closing.load(std::memory_order_seq_cst)) {
      core_.pool.release(&s, 1);
      *status = Status::closed;
      return nullptr;
    }
    return core_.pool.record(s);
  }

  Status commit(std::byte* record) noexcept {
    if (!core_.pool.contains(record)) [[unlikely]]
      return commit_spilled(record);
    SlotHeader* s = core_.pool.slot_of(record);
    if (core_.stopped.load(std::memory_order_acquire)) {
      core_.pool.release(&s, 1);
      core_.counters.abandoned.fetch_add(1, std::memory_order_relaxed);
      return Status::closed;
    }
    internal::Producer* p = registry_->current();
    const std::int64_t seq = p->next_seq->load(std::memory_order_relaxed);
    s->source_id = p->source_id;
    s->seq = seq;
    s->state.store(static_cast<std::uint32_t>(SlotState::committed), std::memory_order_release);
    p->next_seq->store(seq + 1, std::memory_order_relaxed);
    if (!core_.queue.enqueue(p->token, s)) [[unlikely]] {
      // Only when the queue needs a new block and the allocation fails.
      p->next_seq->store(seq, std::memory_order_relaxed);
      core_.pool.release(&s, 1);
      core_.counters.dropped.fetch_add(1, std::memory_order_relaxed);
      return Status::dropped;
    }
    core_.signal.on_commit(core_.pool);
    return Status::ok;
  }

  void abandon(std::byte* record) noexcept {
    if (!core_.pool.contains(record)) {
      spill_header(record)->producer->spill_record_in_use = false;
      core_.counters.abandoned.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    SlotHeader* s = core_.pool.slot_of(record);
    core_.pool.release(&s, 1);
    core_.counters.abandoned.fetch_add(1, std::memory_order_relaxed);
  }

  bool flush(clock::time_point deadline) {
    // The records committed before this call, by slot and generation: a
    // slot is done once its generation moves on (it was freed).
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pending;
    for (std::size_t i = 0; i < core_.pool.capacity(); ++i) {
      SlotHeader* s = core_.pool.slot(i);
      const std::uint32_t generation = s->generation.load(std::memory_order_acquire);
      if (s->state.load(std::memory_order_acquire) ==
          static_cast<std::uint32_t>(SlotState::committed)) {
        pending.emplace_back(static_cast<std::uint32_t>(i), generation);
      }
    }
    UrgentScope urgent(core_);
    while (true) {
      std::erase_if(pending, [&](const auto& p) {
        return core_.pool.slot(p.first)->generation.load(std::memory_order_acquire) != p.second;
      });
      if (pending.empty()) return true;
      const auto now = clock::now();
      if (now >= deadline || core_.stopped.load(std::memory_order_acquire)) return false;
      core_.wait_progress(std::min(deadline, now + std::chrono::milliseconds(10)));
    }
  }

  CloseReport close(clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(close_mutex_);
    if (report_) return *report_;
    core_.closing.store(true, std::memory_order_seq_cst);
    core_.pool.wake_waiters();  // blocked acquirers return Status::closed
    bool drained = false;
    {
      UrgentScope urgent(core_);
      while (true) {
        // in_use covers records being filled (they may still be committed)
        // and records committed but not yet written.
        if (core_.pool.in_use() == 0) {
          drained = true;
          break;
        }
        const auto now = clock::now();
        if (now >= deadline) break;
        core_.wait_progress(std::min(deadline, now + std::chrono::milliseconds(10)));
      }
    }
    if (!drained) core_.declare_give_up();
    core_.stopping.store(true, std::memory_order_release);
    core_.signal.wake_all();
    for (auto& w : writers_) w->join();
    core_.stopped.store(true, std::memory_order_seq_cst);
    core_.sink->close();

    // Whatever is still committed goes to the spill directory if there is
    // one; what cannot go anywhere is counted, loudly (a durable pool keeps
    // it for the next start).
    std::vector<SlotHeader*> left;
    for (std::size_t i = 0; i < core_.pool.capacity(); ++i) {
      SlotHeader* s = core_.pool.slot(i);
      if (s->state.load(std::memory_order_acquire) ==
          static_cast<std::uint32_t>(SlotState::committed)) {
        left.push_back(s);
      }
    }
    std::uint64_t spilled = 0;
    if (core_.spill && !left.empty()) {
      std::vector<RecordRef> refs;
      for (SlotHeader* s : left) {
        resolve_timestamps(core_.pool.record(s));
        refs.push_back({s->source_id, s->seq, core_.pool.record(s)});
      }
      const std::size_t chunk = core_.options.batch_size;
      while (spilled < refs.size()) {
        const std::size_t n = std::min<std::size_t>(chunk, refs.size() - spilled);
        if (core_.spill->append(std::span(refs).subspan(spilled, n)) !=
            internal::SpillWriter::Result::ok) {
          diagnostics()->error("auditpipe: close could not spill: {}", core_.spill->last_error());
          break;
        }
        core_.pool.release(&left[spilled], n);
        spilled += n;
      }
      core_.counters.spilled.fetch_add(spilled, std::memory_order_relaxed);
    }
    if (core_.spill) core_.spill->seal();
    const std::uint64_t unwritten = left.size() - spilled;
    core_.counters.unwritten.store(unwritten, std::memory_order_relaxed);
    if (spilled != 0) {
      diagnostics()->warn(
          "auditpipe: closed with {} records spilled to {}; they are written at "
          "the next start",
          spilled, core_.options.spill_path.string());
    }
    if (unwritten != 0) {
      diagnostics()->error(
          "auditpipe: closed with {} committed records unwritten to {}{}", unwritten,
          core_.sink->describe(),
          core_.pool.durable() ? " (kept in the durable pool for the next start)" : "");
    }
    CloseReport report;
    report.stats = stats();
    report.spilled = spilled;
    report.unwritten = unwritten;
    report.drained = unwritten == 0 && spilled == 0 && drained;
    report_ = report;
    return report;
  }

  Stats stats() const {
    const auto& k = core_.counters;
    Stats s;
    s.committed = registry_->committed();
    s.written = k.written.load(std::memory_order_relaxed);
    s.dropped = k.dropped.load(std::memory_order_relaxed);
    s.timed_out = k.timed_out.load(std::memory_order_relaxed);
    s.pool_exhausted = k.pool_exhausted.load(std::memory_order_relaxed);
    s.abandoned = k.abandoned.load(std::memory_order_relaxed);
    s.rejected_by_sink = k.rejected_by_sink.load(std::memory_order_relaxed);
    s.unwritten = k.unwritten.load(std::memory_order_relaxed);
    s.truncated_fields = k.truncated_fields.load(std::memory_order_relaxed);
    s.blocked = k.blocked.load(std::memory_order_relaxed);
    s.batches = k.batches.load(std::memory_order_relaxed);
    s.write_failures = k.write_failures.load(std::memory_order_relaxed);
    s.retries = k.retries.load(std::memory_order_relaxed);
    s.invalid_utf8_fields = k.invalid_utf8_fields.load(std::memory_order_relaxed);
    s.nul_replaced_fields = k.nul_replaced_fields.load(std::memory_order_relaxed);
    s.connection_pool = core_.sink->connection_pool_stats();
    s.dead_lettered = k.dead_lettered.load(std::memory_order_relaxed);
    s.recovered = k.recovered.load(std::memory_order_relaxed);
    s.spilled = k.spilled.load(std::memory_order_relaxed);
    s.replayed = k.replayed.load(std::memory_order_relaxed);
    s.spill_refused = k.spill_refused.load(std::memory_order_relaxed);
    s.spill_bytes = core_.spill ? core_.spill->bytes() : 0;
    s.spill_skipped_bytes = k.spill_skipped_bytes.load(std::memory_order_relaxed);
    s.spill_damaged_regions = k.spill_damaged_regions.load(std::memory_order_relaxed);
    s.spill_bad_segments = k.spill_bad_segments.load(std::memory_order_relaxed);
    const std::uint32_t failures = k.consecutive_failures.load(std::memory_order_relaxed);
    // An empty segment (just its header) means nothing waits for replay.
    const bool spill_pending = s.spill_bytes > internal::segment_header_size;
    s.health = failures >= 3                   ? Health::down
               : failures > 0 || spill_pending ? Health::degraded
                                               : Health::ok;
    s.pool_capacity = core_.pool.capacity();
    s.pool_in_use = core_.pool.in_use();
    s.batch_size = k.batch_size.snapshot();
    s.write_latency_us = k.write_latency_us.snapshot();
    s.producer_wait_ns = k.producer_wait_ns.snapshot();
    return s;
  }

  const TableDescriptor& table() const noexcept { return core_.table; }
  const Options& options() const noexcept { return core_.options; }

 private:
  // While alive, writers hand over partial batches at once.
  struct UrgentScope {
    explicit UrgentScope(PipelineCore& c) : core(c) {
      core.urgent.fetch_add(1, std::memory_order_acq_rel);
      core.signal.wake_all();
    }
    ~UrgentScope() { core.urgent.fetch_sub(1, std::memory_order_acq_rel); }
    PipelineCore& core;
  };

  SpillRecordHeader* spill_header(std::byte* record) const noexcept {
    return reinterpret_cast<SpillRecordHeader*>(record - spill_offset_);
  }

  // The calling thread's record outside the pool (Overflow::spill), reset
  // to the prototype; nullptr if it is in use already (a second acquire()
  // before the first was committed) or cannot be allocated.
  std::byte* spill_record() noexcept {
    internal::Producer* p = nullptr;
    try {
      p = registry_->current();
      if (p->spill_record == nullptr) {
        const std::size_t align = std::max<std::size_t>(core_.table.record_align, 64);
        p->spill_storage.reset(new std::byte[spill_offset_ + core_.table.record_size + align]);
        const auto base = reinterpret_cast<std::uintptr_t>(p->spill_storage.get());
        p->spill_record = reinterpret_cast<std::byte*>((base + align - 1) / align * align);
      }
    } catch (...) {
      return nullptr;
    }
    if (p->spill_record_in_use) return nullptr;
    p->spill_record_in_use = true;
    reinterpret_cast<SpillRecordHeader*>(p->spill_record)->producer = p;
    std::byte* record = p->spill_record + spill_offset_;
    std::memcpy(record, core_.table.prototype, core_.table.record_size);
    return record;
  }

  // Commit of a record outside the pool: appended to the spill directory,
  // or, if that is full or failing, copied into a pool slot after waiting
  // as Overflow::block does.
  Status commit_spilled(std::byte* record) noexcept {
    internal::Producer* p = spill_header(record)->producer;
    // A spilled record may be replayed after a reboot, when cycle counts
    // mean nothing: its timestamps become wall time now.
    resolve_timestamps(record);
    const std::int64_t seq = p->next_seq->load(std::memory_order_relaxed);
    const RecordRef ref{p->source_id, seq, record};
    const auto result = core_.spill->append(std::span(&ref, 1));
    if (result == internal::SpillWriter::Result::ok) {
      p->next_seq->store(seq + 1, std::memory_order_relaxed);
      p->spill_record_in_use = false;
      core_.counters.spilled.fetch_add(1, std::memory_order_relaxed);
      spill_refusing_.store(false, std::memory_order_relaxed);
      return Status::ok;
    }
    core_.counters.spill_refused.fetch_add(1, std::memory_order_relaxed);
    if (!spill_refusing_.exchange(true, std::memory_order_relaxed)) {
      diagnostics()->error(
          "auditpipe: cannot spill ({}); records wait for pool slots instead, up "
          "to max_wait",
          core_.spill->last_error());
    }
    Status status = Status::ok;
    SlotHeader* s = acquire_blocking(&status);
    if (s == nullptr) {
      p->spill_record_in_use = false;
      return status;
    }
    std::byte* slot_record = core_.pool.record(s);
    std::memcpy(slot_record, record, core_.table.record_size);
    p->spill_record_in_use = false;
    return commit(slot_record);
  }

  // Turns fast_now() readings in the record's timestamp columns into wall
  // time (the writer does this for records it writes).
  void resolve_timestamps(std::byte* record) const noexcept {
    if (core_.timestamp_columns.empty()) return;
    internal::resolve_timestamps(record, core_.timestamp_columns, internal::TscClock::snapshot());
  }

  // Recovered records may hold fast_now() readings of the run that
  // committed them. In this boot the TSC is the same and the current
  // calibration reads them; after a reboot only the one the file kept can.
  void resolve_recovered_timestamps(const std::vector<SlotHeader*>& recovered) {
    internal::PoolFile* file = core_.pool.file();
    if (core_.timestamp_columns.empty() || file == nullptr) return;
    const auto saved = file->earlier_clock();
    const internal::TscClock::Snapshot clock = saved.this_boot && timestamp::fast_now_reads_tsc()
                                                   ? internal::TscClock::snapshot()
                                                   : saved.clock;
    const timestamp now = timestamp::now();
    std::size_t unreadable = 0;
    for (SlotHeader* s : recovered) {
      std::byte* record = core_.pool.record(s);
      for (const Column* c : core_.timestamp_columns) {
        timestamp t;
        std::memcpy(&t.micros, record + c->offset, sizeof t.micros);
        if (!t.pending()) continue;
        if (saved.known) {
          t = clock.resolve(t);
        } else {
          t = now;
          ++unreadable;
        }
        std::memcpy(record + c->offset, &t.micros, sizeof t.micros);
      }
    }
    if (unreadable != 0) {
      diagnostics()->warn(
          "auditpipe: {} timestamps in records recovered from {} were taken on an earlier boot "
          "and the file holds no clock to read them with; they are set to the time of recovery",
          unreadable, core_.options.durable_path.string());
    }
  }

  SlotHeader* acquire_slow(Status* status) noexcept {
    auto& k = core_.counters;
    if (core_.closing.load(std::memory_order_acquire)) {
      *status = Status::closed;
      return nullptr;
    }
    switch (core_.options.overflow) {
      case Overflow::drop:
        k.dropped.fetch_add(1, std::memory_order_relaxed);
        *status = Status::dropped;
        return nullptr;
      case Overflow::fail:
        k.pool_exhausted.fetch_add(1, std::memory_order_relaxed);
        *status = Status::pool_exhausted;
        return nullptr;
      case Overflow::block:
      case Overflow::spill:  // only here when the spill directory refused
        break;
    }
    return acquire_blocking(status);
  }

  // Waits up to max_wait for a slot (Overflow::block).
  SlotHeader* acquire_blocking(Status* status) noexcept {
    auto& k = core_.counters;
    const auto t0 = clock::now();
    // A full pool means writers should not wait for fuller batches.
    core_.signal.wake_all();
    SlotHeader* s = core_.pool.acquire_until(t0 + core_.options.max_wait, core_.closing);
    const auto waited =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
    k.blocked.fetch_add(1, std::memory_order_relaxed);
    k.producer_wait_ns.record(static_cast<std::uint64_t>(waited));
    if (s == nullptr) {
      if (core_.closing.load(std::memory_order_acquire)) {
        *status = Status::closed;
      } else {
        k.timed_out.fetch_add(1, std::memory_order_relaxed);
        *status = Status::timed_out;
      }
    }
    return s;
  }

  PipelineCore core_;
  std::shared_ptr<internal::ProducerRegistry> registry_;
  std::vector<std::unique_ptr<internal::BatchWriter>> writers_;
  const std::size_t spill_offset_;
  std::atomic<bool> spill_refusing_{false};
  std::mutex close_mutex_;
  std::optional<CloseReport> report_;
};

Pipeline::Pipeline(const TableDescriptor& table, std::shared_ptr<Sink> sink,
                   const Options& options) {
  const Options resolved = resolve(table, sink.get(), options);
  impl_ = std::make_unique<Impl>(table, std::move(sink), resolved);
}

Pipeline::~Pipeline() = default;

std::byte* Pipeline::acquire(Status* status) noexcept {
  return impl_->acquire(status);
}
Status Pipeline::commit(std::byte* record) noexcept {
  return impl_->commit(record);
}
void Pipeline::abandon(std::byte* record) noexcept {
  impl_->abandon(record);
}
bool Pipeline::flush(clock::time_point deadline) {
  return impl_->flush(deadline);
}
CloseReport Pipeline::close(clock::time_point deadline) {
  return impl_->close(deadline);
}
Stats Pipeline::stats() const {
  return impl_->stats();
}
const TableDescriptor& Pipeline::table() const noexcept {
  return impl_->table();
}
const Options& Pipeline::options() const noexcept {
  return impl_->options();
}

}  // namespace auditpipe
