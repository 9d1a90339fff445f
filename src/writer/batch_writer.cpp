#include "writer/batch_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "auditpipe/diagnostics.h"
#include "auditpipe/prometheus.h"
#include "auditpipe/utf8.h"
#include "common/tsc_clock.h"
#include "durable/pool_file.h"

namespace auditpipe::internal {

namespace {

using clock = PipelineCore::clock;

std::uint64_t micros_since(clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
}

// Makes every text field of `record` valid UTF-8 (see utf8.h), and free of
// NUL bytes if the sink cannot store them; counts the fields it changed.
void repair_text(std::byte* record, const std::vector<const Column*>& text_columns, bool no_nul,
                 Counters& counters) {
  for (const Column* c : text_columns) {
    std::byte* field = record + c->offset;
    const std::string_view text = read_text(record, *c);
    const bool has_nul = no_nul && text.find('\0') != std::string_view::npos;
    const bool valid = is_valid_utf8(text);
    if (valid && !has_nul) continue;
    char* data = reinterpret_cast<char*>(field + text_layout::data_offset);
    std::uint32_t flags = read_text_flags(record, *c);
    std::size_t size = text.size();
    bool cut = false;
    if (!valid) {
      size = repair_utf8(data, size, c->max_length, &cut);
      flags |= text_flags::invalid_utf8;
      counters.invalid_utf8_fields.fetch_add(1, std::memory_order_relaxed);
    }
    if (has_nul) {
      bool nul_cut = false;
      size = replace_nul(data, size, c->max_length, &nul_cut);
      cut = cut || nul_cut;
      counters.nul_replaced_fields.fetch_add(1, std::memory_order_relaxed);
    }
    if (cut) flags |= text_flags::truncated;
    const auto size32 = static_cast<std::uint32_t>(size);
    std::memcpy(field + text_layout::size_offset, &size32, sizeof size32);
    std::memcpy(field + text_layout::flags_offset, &flags, sizeof flags);
  }
}

}  // namespace

// Records from the pool: stored ones give their slots back.
struct BatchWriter::PoolOutcome final : Outcome {
  explicit PoolOutcome(BatchWriter& w) : writer(w) {}
  void stored(std::size_t begin, std::size_t count) override {
    std::uint64_t truncated = 0;
    for (std::size_t i = begin; i < begin + count; ++i) {
      for (const Column* c : writer.text_columns_) {
        truncated += (read_text_flags(writer.refs_[i].data, *c) & text_flags::truncated) != 0;
      }
    }
    // Counted before the slots go back: flush() returns once they have, and
    // stats() right after it must already show these records.
    auto& k = writer.core_.counters;
    k.truncated_fields.fetch_add(truncated, std::memory_order_relaxed);
    k.written.fetch_add(count, std::memory_order_relaxed);
    writer.core_.pool.release(&writer.slots_[begin], count);
  }
  void refused(std::size_t index, const std::string& message) override {
    writer.dead_letter(writer.refs_[index], message);
    writer.core_.pool.release(&writer.slots_[index], 1);
  }
  BatchWriter& writer;
};

// Records from a spill segment: nothing to give back.
struct BatchWriter::ReplayOutcome final : Outcome {
  explicit ReplayOutcome(BatchWriter& w) : writer(w) {}
  void stored(std::size_t, std::size_t count) override {
    writer.core_.counters.replayed.fetch_add(count, std::memory_order_relaxed);
  }
  void refused(std::size_t index, const std::string& message) override {
    writer.dead_letter(writer.replay_refs_[index], message);
  }
  BatchWriter& writer;
};

BatchWriter::BatchWriter(PipelineCore& core, unsigned index)
    : core_(core),
      index_(index),
      token_(core.queue),
      slots_(core.options.batch_size),
      refs_(core.options.batch_size),
      jitter_(std::random_device{}()),
      no_nul_(!core.sink->accepts_nul_in_text()) {
  for (const Column& c : core_.table.columns) {
    if (c.type == ColumnType::text) text_columns_.push_back(&c);
  }
  thread_ = std::thread([this] { run(); });
}

BatchWriter::~BatchWriter() {
  join();
}

void BatchWriter::join() {
  if (thread_.joinable()) thread_.join();
}

bool BatchWriter::batch_is_due(std::size_t held, clock::time_point first) {
  // (A full pool is noticed through take_exhausted(), not in_use(): that
  // reads the free list's head, which producers write on every acquire.)
  return held == slots_.size() || core_.urgent.load(std::memory_order_acquire) != 0 ||
         core_.stopping.load(std::memory_order_acquire) || core_.pool.waiters() != 0 ||
         core_.pool.take_exhausted() || clock::now() - first >= core_.options.flush_interval;
}

void BatchWriter::run() {
  mark_internal_thread();
  const std::size_t batch_size = slots_.size();
  const bool spill_keeper = index_ == 0 && core_.spill != nullptr;
  PoolFile* const clock_keeper =
      index_ == 0 && !core_.timestamp_columns.empty() ? core_.pool.file() : nullptr;
  const auto summary_interval =
      index_ == 0 ? core_.options.summary_interval : std::chrono::milliseconds(0);
  clock::time_point next_summary = clock::now() + summary_interval;
  std::size_t held = 0;
  clock::time_point first{};
  while (true) {
    if (summary_interval.count() > 0 && clock::now() >= next_summary) {
      diagnostics()->info("{}", summary_line(core_.stats()));
      next_summary = clock::now() + summary_interval;
    }
    // Taken before looking for work, so a wake_all() from here on ends the
    // sleep below.
    const std::uint64_t epoch = core_.signal.epoch();
    if (core_.give_up.load(std::memory_order_acquire)) break;  // held slots stay committed
    if (spill_keeper) core_.spill->sync_if_due(core_.options.spill_fsync_interval);
    if (held < batch_size) {
      const std::size_t got =
          core_.queue.try_dequeue_bulk(token_, slots_.data() + held, batch_size - held);
      if (got != 0 && held == 0) first = clock::now();
      held += got;
    }
    if (held != 0) {
      if (batch_is_due(held, first)) {
        const auto& timestamp_columns = core_.timestamp_columns;
        const TscClock::Snapshot clock =
            timestamp_columns.empty() ? TscClock::Snapshot{} : TscClock::snapshot();
        // A durable pool keeps the latest calibration, for reading the
        // records it holds after a reboot.
        if (clock_keeper) clock_keeper->save_clock(clock);
        for (std::size_t i = 0; i < held; ++i) {
          // The records' lines come from the producers' caches: ask for
          // those of a few records ahead while this one is prepared.
          if (i + 4 < held) {
            const auto* ahead = reinterpret_cast<const std::byte*>(slots_[i + 4]);
            for (std::size_t off = 0; off < core_.pool.slot_stride(); off += 64) {
              __builtin_prefetch(ahead + off, 0, 3);
            }
          }
          // Acquire pairs with commit()'s release store: the record's bytes
          // are visible here without relying on the queue's fences.
          (void)slots_[i]->state.load(std::memory_order_acquire);
          std::byte* record = core_.pool.record(slots_[i]);
          resolve_timestamps(record, timestamp_columns, clock);
          repair_text(record, text_columns_, no_nul_, core_.counters);
          refs_[i] = RecordRef{slots_[i]->source_id, slots_[i]->seq, record};
        }
        PoolOutcome outcome(*this);
        if (!write(refs_, 0, held, outcome)) break;
        held = 0;
        // More than another batch waiting: make sure a sleeping peer helps.
        if (core_.options.writers > 1 && core_.queue.size_approx() >= batch_size) {
          core_.signal.wake_one(true);
        }
        continue;
      }
    } else if (core_.stopping.load(std::memory_order_acquire)) {
      if (core_.queue.size_approx() == 0) break;
      continue;
    } else if (spill_keeper && replay_some()) {
      continue;  // spilled records go while the queue has no batch waiting
    }
    clock::time_point deadline = (held != 0 ? first : clock::now()) + core_.options.flush_interval;
    if (spill_keeper)
      deadline = std::min(deadline, clock::now() + core_.options.spill_fsync_interval);
    core_.signal.arm(core_.pool.acquisitions() + static_cast<std::uint32_t>(batch_size - held));
    // A record committed while arming may have missed the signal: look once
    // more before sleeping.
    if (core_.queue.size_approx() != 0 && held + core_.queue.size_approx() >= batch_size) {
      core_.signal.disarm();
      continue;
    }
    core_.signal.wait_until(epoch, deadline);
    core_.signal.disarm();
  }
}

bool BatchWriter::write(std::span<const RecordRef> refs, std::size_t begin, std::size_t count,
                        Outcome& outcome) {
  auto backoff =
      std::chrono::duration_cast<std::chrono::microseconds>(core_.options.retry_backoff_initial);
  const auto backoff_max =
      std::chrono::duration_cast<std::chrono::microseconds>(core_.options.retry_backoff_max);
  std::uint64_t failures = 0;
  auto& k = core_.counters;
  while (true) {
    const clock::time_point t0 = clock::now();
    const WriteResult result = core_.sink->write(Batch{core_.table, refs.subspan(begin, count)});
    if (result.ok()) {
      if (k.consecutive_failures.exchange(0, std::memory_order_acq_rel) != 0 || failures != 0) {
        diagnostics()->info(
            "auditpipe: writer {}: {} takes writes again ({} records written after "
            "{} failed attempts)",
            index_, core_.sink->describe(), count, failures);
      }
      k.batches.fetch_add(1, std::memory_order_relaxed);
      k.batch_size.record(count);
      k.write_latency_us.record(micros_since(t0));
      outcome.stored(begin, count);
      if (core_.urgent.load(std::memory_order_acquire) != 0) core_.notify_progress();
      return true;
    }
    ++failures;
    k.write_failures.fetch_add(1, std::memory_order_relaxed);
    if (result.kind == WriteResult::Kind::rejected) {
      if (count == 1) {
        diagnostics()->error(
            "auditpipe: {} refused record (source_id {}, seq {}); counted in "
            "rejected_by_sink{}: {}",
            core_.sink->describe(), refs[begin].source_id, refs[begin].seq,
            core_.dead_letters ? " and written to the dead-letter file" : "", result.message);
        k.rejected_by_sink.fetch_add(1, std::memory_order_relaxed);
        outcome.refused(begin, result.message);
        if (core_.urgent.load(std::memory_order_acquire) != 0) core_.notify_progress();
        return true;
      }
      // Find the refused records: each half is written (or split) alone.
      const std::size_t half = count / 2;
      const bool a = write(refs, begin, half, outcome);
      const bool b = write(refs, begin + half, count - half, outcome);
      return a && b;
    }
    k.consecutive_failures.fetch_add(1, std::memory_order_acq_rel);
    if (core_.give_up.load(std::memory_order_acquire)) return false;
    diagnostics()->warn(
        "auditpipe: writer {}: writing {} records to {} failed (attempt {}), "
        "retrying in {} ms: {}",
        index_, count, core_.sink->describe(), failures, backoff.count() / 1000, result.message);
    // Full jitter in the upper half of the backoff: writers that failed
    // together do not come back together.
    std::uniform_int_distribution<std::int64_t> pick(backoff.count() / 2, backoff.count());
    core_.sleep_unless_giving_up(clock::now() + std::chrono::microseconds(pick(jitter_)));
    if (core_.give_up.load(std::memory_order_acquire)) return false;
    backoff = std::min(backoff * 2, backoff_max);
    k.retries.fetch_add(1, std::memory_order_relaxed);
  }
}

void BatchWriter::dead_letter(const RecordRef& record, const std::string& message) {
  if (!core_.dead_letters) return;
  if (core_.dead_letters->append(core_.table, record, message)) {
    core_.counters.dead_lettered.fetch_add(1, std::memory_order_relaxed);
  } else {
    diagnostics()->error("auditpipe: cannot append to dead-letter file {}",
                         core_.dead_letters->path().string());
  }
}

bool BatchWriter::replay_some() {
  // Not while live writes fail (the database is away), nor when closing.
  if (core_.counters.consecutive_failures.load(std::memory_order_acquire) != 0 ||
      core_.stopping.load(std::memory_order_acquire)) {
    return false;
  }
  if (!reader_) {
    auto segments = core_.spill->sealed_segments();
    if (segments.empty()) {
      if (!core_.spill->has_unsealed_records()) return false;
      core_.spill->seal();
      segments = core_.spill->sealed_segments();
      if (segments.empty()) return false;
    }
    reader_path_ = segments.front();
    try {
      reader_ = std::make_unique<SpillReader>(reader_path_);
    } catch (const std::exception& e) {
      diagnostics()->error("auditpipe: {}; set aside as {}.bad", e.what(), reader_path_.string());
      core_.spill->quarantine(reader_path_);
      core_.counters.spill_bad_segments.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (!reader_->header_valid() || reader_->fingerprint() != fingerprint(core_.table) ||
        reader_->record_size() != core_.table.record_size) {
      diagnostics()->error(
          "auditpipe: spill segment {} has a damaged header or was written for "
          "another record layout; set aside as {}.bad, not replayed",
          reader_path_.string(), reader_path_.string());
      reader_.reset();
      core_.spill->quarantine(reader_path_);
      core_.counters.spill_bad_segments.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  const std::size_t n = reader_->next(slots_.size(), replay_refs_);
  if (n == 0) {
    finish_segment();
    return true;
  }
  for (const RecordRef& r : replay_refs_) {
    // The records live in the reader's buffer, which is ours to change.
    // (Spilled timestamps were resolved before they were spilled.)
    repair_text(const_cast<std::byte*>(r.data), text_columns_, no_nul_, core_.counters);
  }
  ReplayOutcome outcome(*this);
  if (!write(replay_refs_, 0, n, outcome)) {
    reader_.reset();  // closing: the segment stays, and is replayed next time
    return false;
  }
  return true;
}

void BatchWriter::finish_segment() {
  const std::uint64_t skipped = reader_->skipped_bytes();
  if (skipped != 0) {
    core_.counters.spill_skipped_bytes.fetch_add(skipped, std::memory_order_relaxed);
    core_.counters.spill_damaged_regions.fetch_add(reader_->damaged_regions(),
                                                   std::memory_order_relaxed);
    diagnostics()->warn(
        "auditpipe: replaying spill segment {} skipped {} damaged bytes in {} "
        "places; the records around them were written",
        reader_path_.string(), skipped, reader_->damaged_regions());
  }
  reader_.reset();
  core_.spill->remove(reader_path_);
}

}  // namespace auditpipe::internal
