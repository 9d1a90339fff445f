#include "writer/batch_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "auditpipe/diagnostics.h"
#include "common/start_thread.h"

namespace auditpipe::internal {

namespace {

using clock = WriterControl::clock;

std::uint64_t micros_since(clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
}

// Says something through the diagnostics logger, unless saying it fails:
// out of memory, describe()'s copy of a URL or the line's formatting
// throws std::bad_alloc, and an exception out of a writer's thread would
// end the process, while the writer can go on writing.
template <typename Say>
void report(Say&& say) noexcept {
  try {
    say();
  } catch (...) {  // the line is lost; the writer is not
  }
}

}  // namespace

// Records from the pool: stored ones give their slots back.
struct BatchWriter::PoolOutcome final : Outcome {
  explicit PoolOutcome(BatchWriter& w) : writer(w) {}
  void stored(std::size_t begin, std::size_t count) override {
    // Counted before the slots go back: flush() returns once they have, and
    // stats() right after it must already show these records.
    writer.parts_.counters.written.fetch_add(count, std::memory_order_relaxed);
    writer.parts_.intake.release(&writer.slots_[begin], count);
  }
  void refused(std::size_t index, const std::string& message) override {
    writer.dead_letter(writer.refs_[index], message);
    writer.parts_.intake.release(&writer.slots_[index], 1);
  }
  BatchWriter& writer;
};

// Records from a spill segment: nothing to give back.
struct BatchWriter::ReplayOutcome final : Outcome {
  ReplayOutcome(BatchWriter& w, std::span<const RecordRef> r) : writer(w), refs(r) {}
  void stored(std::size_t, std::size_t count) override {
    writer.parts_.counters.replayed.fetch_add(count, std::memory_order_relaxed);
  }
  void refused(std::size_t index, const std::string& message) override {
    writer.dead_letter(refs[index], message);
  }
  bool replayed() const override { return true; }
  BatchWriter& writer;
  std::span<const RecordRef> refs;
};

BatchWriter::BatchWriter(const WriterParts& parts, unsigned index, Spill* replay)
    : parts_(parts),
      index_(index),
      replay_(replay),
      token_(parts.intake.consumer_token()),
      slots_(parts.options.batch_size),
      refs_(parts.options.batch_size),
      sizer_(parts.options.batch_size,
             std::chrono::duration_cast<std::chrono::microseconds>(
                 parts.options.write_latency_target.value_or(std::chrono::milliseconds(0)))),
      jitter_(std::random_device{}()) {
  thread_ = start_thread("a writer thread", [this] { run(); });
}

BatchWriter::~BatchWriter() {
  join();
}

void BatchWriter::join() {
  if (thread_.joinable()) thread_.join();
}

bool BatchWriter::batch_is_due(std::size_t held, clock::time_point first) {
  return held >= sizer_.limit() || parts_.control.urgent() || parts_.control.stopping() ||
         parts_.intake.producers_short_of_slots() ||
         clock::now() - first >= parts_.options.flush_interval;
}

void BatchWriter::run() {
  mark_internal_thread();
  Intake& intake = parts_.intake;
  WriterControl& control = parts_.control;
  std::size_t held = 0;
  clock::time_point first{};
  while (true) {
    // Taken before looking for work, so a wake_all() from here on ends the
    // sleep below.
    const std::uint64_t epoch = intake.signal().epoch();
    if (control.giving_up()) break;  // held slots stay committed
    const std::size_t limit = sizer_.limit();
    if (held < limit) {
      const std::size_t got = intake.take(token_, slots_.data() + held, limit - held);
      if (got != 0 && held == 0) first = clock::now();
      held += got;
    }
    if (held != 0) {
      if (batch_is_due(held, first)) {
        if (!write_held(held)) break;
        held = 0;
        // More than another batch waiting: make sure a sleeping peer helps.
        if (parts_.options.writers > 1 && intake.queued() >= sizer_.limit()) {
          intake.signal().wake_one(true);
        }
        // Records on disk get every other turn while fresh ones keep
        // coming, or they would wait for the producers to pause.
        if (replay_ != nullptr && replay_->pending() && !replay_one_batch() &&
            control.giving_up()) {
          break;
        }
        continue;
      }
    } else if (control.stopping()) {
      if (intake.queued() == 0) break;
      continue;
    }
    // No batch due: spilled records go now (the held ones wait one write
    // longer, at most their flush interval).
    if (replay_ != nullptr && replay_->pending() && replay_one_batch()) continue;
    if (control.giving_up()) break;
    const clock::time_point deadline =
        (held != 0 ? first : clock::now()) + parts_.options.flush_interval;
    intake.signal().arm(intake.acquisitions() + static_cast<std::uint32_t>(limit - held));
    // A record committed while arming may have missed the signal: look once
    // more before sleeping.
    if (intake.queued() != 0 && held + intake.queued() >= limit) {
      intake.signal().disarm();
      continue;
    }
    intake.signal().wait_until(epoch, deadline);
    intake.signal().disarm();
  }
}

bool BatchWriter::replay_one_batch() noexcept {
  try {
    return replay_->replay_some(sizer_.limit(), [this](std::span<const RecordRef> refs) {
      ReplayOutcome outcome(*this, refs);
      return write(refs, 0, refs.size(), outcome);
    });
  } catch (const std::exception& e) {
    // Out of memory reading a segment (std::bad_alloc): what was read
    // again is written again, skipped by key; the writer goes on.
    report([&] {
      diagnostics()->error(
          "auditpipe: writer {}: replaying spilled records failed ({}); tried again in 100 ms",
          index_, e.what());
    });
    parts_.control.sleep_unless_giving_up(clock::now() + std::chrono::milliseconds(100));
    return false;
  }
}

bool BatchWriter::write_held(std::size_t held) {
  Intake& intake = parts_.intake;
  const TscClock::Snapshot clock = parts_.finisher.clock();
  for (std::size_t i = 0; i < held; ++i) {
    // The records' lines come from the producers' caches: ask for those of
    // a few records ahead while this one is finished.
    if (i + 4 < held) {
      const auto* ahead = reinterpret_cast<const std::byte*>(slots_[i + 4]);
      for (std::size_t off = 0; off < intake.slot_stride(); off += 64) {
        __builtin_prefetch(ahead + off, 0, 3);
      }
    }
    // Acquire pairs with commit()'s release store: the record's bytes are
    // visible here without relying on the queue's fences.
    (void)slots_[i]->state.load(std::memory_order_acquire);
    std::byte* record = intake.record(slots_[i]);
    parts_.finisher.finish(record, clock);
    refs_[i] = RecordRef{slots_[i]->source_id, slots_[i]->seq, record};
  }
  PoolOutcome outcome(*this);
  return write(refs_, 0, held, outcome);
}

bool BatchWriter::write(std::span<const RecordRef> refs, std::size_t begin, std::size_t count,
                        Outcome& outcome) {
  const Options& o = parts_.options;
  Sink& sink = parts_.sink;
  WriterControl& control = parts_.control;
  auto& k = parts_.counters;
  auto backoff = std::chrono::duration_cast<std::chrono::microseconds>(o.retry_backoff_initial);
  const auto backoff_max =
      std::chrono::duration_cast<std::chrono::microseconds>(o.retry_backoff_max);
  std::uint64_t failures = 0;
  while (true) {
    const clock::time_point t0 = clock::now();
    const WriteResult result =
        sink.write(Batch{parts_.table, refs.subspan(begin, count), outcome.replayed()});
    if (result.ok()) {
      if (k.write_succeeded() || failures != 0) {
        // This writer's own failed attempts, if it had any: a writer that
        // waited for a connection instead has none to count.
        report([&] {
          if (failures != 0) {
            diagnostics()->info(
                "auditpipe: writer {}: {} takes writes again ({} records written after {} failed "
                "attempts)",
                index_, sink.describe(), count, failures);
          } else {
            diagnostics()->info("auditpipe: writer {}: {} takes writes again ({} records written)",
                                index_, sink.describe(), count);
          }
        });
      }
      const std::uint64_t took_us = micros_since(t0);
      k.batches.fetch_add(1, std::memory_order_relaxed);
      k.batch_size.record(count);
      k.write_latency_us.record(took_us);
      sizer_.stored(count, std::chrono::microseconds(took_us));
      outcome.stored(begin, count);
      if (control.urgent()) control.notify_progress();
      return true;
    }
    ++failures;
    k.write_failures.fetch_add(1, std::memory_order_relaxed);
    if (result.kind == WriteResult::Kind::rejected) {
      if (count == 1) {
        report([&] {
          diagnostics()->error(
              "auditpipe: {} refused record (source_id {}, seq {}); counted in "
              "rejected_by_sink{}: {}",
              sink.describe(), refs[begin].source_id, refs[begin].seq,
              parts_.dead_letters ? " and written to the dead-letter file" : "", result.message);
        });
        k.rejected_by_sink.fetch_add(1, std::memory_order_relaxed);
        outcome.refused(begin, result.message);
        if (control.urgent()) control.notify_progress();
        return true;
      }
      // Find the refused records: each half is written (or split) alone.
      const std::size_t half = count / 2;
      const bool a = write(refs, begin, half, outcome);
      const bool b = write(refs, begin + half, count - half, outcome);
      return a && b;
    }
    const bool permanent = result.kind == WriteResult::Kind::permanent;
    k.write_failed(result.message, permanent);
    if (control.giving_up()) return false;
    // No retry mends a configuration error soon: retry at the slowest pace,
    // and say so louder.
    if (permanent) backoff = backoff_max;
    report([&] {
      diagnostics()->log(
          permanent ? spdlog::level::err : spdlog::level::warn,
          "auditpipe: writer {}: writing {} records to {} failed (attempt {}){}, retrying in {} "
          "ms: {}",
          index_, count, sink.describe(), failures,
          permanent ? " and cannot succeed until its configuration is fixed" : "",
          backoff.count() / 1000, result.message);
    });
    // Full jitter in the upper half of the backoff: writers that failed
    // together do not come back together.
    std::uniform_int_distribution<std::int64_t> pick(backoff.count() / 2, backoff.count());
    control.sleep_unless_giving_up(clock::now() + std::chrono::microseconds(pick(jitter_)));
    if (control.giving_up()) return false;
    backoff = std::min(backoff * 2, backoff_max);
    k.retries.fetch_add(1, std::memory_order_relaxed);
  }
}

void BatchWriter::dead_letter(const RecordRef& record, const std::string& message) noexcept {
  DeadLetterFile* file = parts_.dead_letters;
  if (file == nullptr) return;
  bool appended = false;
  try {
    appended = file->append(parts_.table, record, message);
  } catch (...) {  // no memory for the line (std::bad_alloc): not appended
  }
  if (appended) {
    parts_.counters.dead_lettered.fetch_add(1, std::memory_order_relaxed);
  } else {
    report([&] {
      diagnostics()->error("auditpipe: cannot append to dead-letter file {}",
                           file->path().string());
    });
  }
}

}  // namespace auditpipe::internal
