#include "batch_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "auditpipe/diagnostics.h"

namespace auditpipe::internal {

namespace {

using clock = PipelineCore::clock;

std::uint64_t micros_since(clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
}

}  // namespace

BatchWriter::BatchWriter(PipelineCore& core, unsigned index)
    : core_(core),
      index_(index),
      token_(core.queue),
      slots_(core.options.batch_size),
      refs_(core.options.batch_size),
      jitter_(std::random_device{}()) {
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

bool BatchWriter::batch_is_due(std::size_t held, clock::time_point first) const {
  return held == slots_.size() || core_.urgent.load(std::memory_order_acquire) != 0 ||
         core_.stopping.load(std::memory_order_acquire) || core_.pool.waiters() != 0 ||
         core_.pool.in_use() >= core_.pool.capacity() ||
         clock::now() - first >= core_.options.flush_interval;
}

void BatchWriter::run() {
  const std::size_t batch_size = slots_.size();
  std::size_t held = 0;
  clock::time_point first{};
  while (true) {
    // Taken before looking for work, so a wake_all() from here on ends the
    // sleep below.
    const std::uint64_t epoch = core_.signal.epoch();
    if (core_.give_up.load(std::memory_order_acquire)) break;  // held slots stay committed
    if (held < batch_size) {
      const std::size_t got =
          core_.queue.try_dequeue_bulk(token_, slots_.data() + held, batch_size - held);
      if (got != 0 && held == 0) first = clock::now();
      held += got;
    }
    if (held != 0) {
      if (batch_is_due(held, first)) {
        for (std::size_t i = 0; i < held; ++i) {
          // Acquire pairs with commit()'s release store: the record's bytes
          // are visible here without relying on the queue's fences.
          (void)slots_[i]->state.load(std::memory_order_acquire);
          refs_[i] = RecordRef{slots_[i]->source_id, slots_[i]->seq, core_.pool.record(slots_[i])};
        }
        if (!write(0, held)) break;
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
    }
    const clock::time_point deadline =
        (held != 0 ? first : clock::now()) + core_.options.flush_interval;
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

bool BatchWriter::write(std::size_t begin, std::size_t count) {
  auto backoff =
      std::chrono::duration_cast<std::chrono::microseconds>(core_.options.retry_backoff_initial);
  const auto backoff_max =
      std::chrono::duration_cast<std::chrono::microseconds>(core_.options.retry_backoff_max);
  std::uint64_t failures = 0;
  while (true) {
    const clock::time_point t0 = clock::now();
    const WriteResult result =
        core_.sink->write(Batch{core_.table, std::span<const RecordRef>(&refs_[begin], count)});
    if (result.ok()) {
      if (failures != 0) {
        diagnostics()->info(
            "auditpipe: writer {}: a batch of {} records was written after {} "
            "failed attempts",
            index_, count, failures);
      }
      finish(begin, count, micros_since(t0));
      return true;
    }
    ++failures;
    core_.counters.write_failures.fetch_add(1, std::memory_order_relaxed);
    if (result.kind == WriteResult::Kind::rejected) {
      if (count == 1) {
        refuse(begin, result.message);
        return true;
      }
      // Find the refused records: each half is written (or split) alone.
      const std::size_t half = count / 2;
      const bool a = write(begin, half);
      const bool b = write(begin + half, count - half);
      return a && b;
    }
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
    core_.counters.retries.fetch_add(1, std::memory_order_relaxed);
  }
}

void BatchWriter::finish(std::size_t begin, std::size_t count, std::uint64_t micros) {
  std::uint64_t truncated = 0;
  for (std::size_t i = begin; i < begin + count; ++i) {
    for (const Column* c : text_columns_) {
      truncated += (read_text_flags(refs_[i].data, *c) & text_flags::truncated) != 0;
    }
  }
  core_.pool.release(&slots_[begin], count);
  auto& k = core_.counters;
  k.truncated_fields.fetch_add(truncated, std::memory_order_relaxed);
  k.written.fetch_add(count, std::memory_order_relaxed);
  k.batches.fetch_add(1, std::memory_order_relaxed);
  k.batch_size.record(count);
  k.write_latency_us.record(micros);
  if (core_.urgent.load(std::memory_order_acquire) != 0) core_.notify_progress();
}

void BatchWriter::refuse(std::size_t index, const std::string& message) {
  diagnostics()->error(
      "auditpipe: {} refused record (source_id {}, seq {}); it is counted in "
      "rejected_by_sink and not retried: {}",
      core_.sink->describe(), refs_[index].source_id, refs_[index].seq, message);
  core_.pool.release(&slots_[index], 1);
  core_.counters.rejected_by_sink.fetch_add(1, std::memory_order_relaxed);
  if (core_.urgent.load(std::memory_order_acquire) != 0) core_.notify_progress();
}

}  // namespace auditpipe::internal
