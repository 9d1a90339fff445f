// BatchWriter: one writer thread. It drains the queue in batches of up to
// batch_size, hands each batch to the sink as one write, and returns the
// slots to the pool once the sink has stored them.
//
// It never spins and never sleeps in a loop: with nothing to do it waits on
// the WriterSignal until producers have committed enough for a batch or the
// flush interval passes. A failed write is retried with capped exponential
// backoff and jitter for as long as it takes (while the pool fills and the
// overflow policy applies upstream); a batch the sink refuses as data is
// split in halves until the refused records are isolated, so one bad record
// never holds back the others.
//
// Invariant: a slot leaves the writer only through the pool's release(),
// after the sink stored it or refused it alone (counted), or stays committed
// when close() gives up (then counted as unwritten).
//
// Thread safety: owns its thread; the constructor starts it, join() ends it
// once PipelineCore::stopping is set.
#pragma once

#include <cstddef>
#include <random>
#include <thread>
#include <vector>

#include "auditpipe/sink.h"
#include "pipeline_core.h"

namespace auditpipe::internal {

class BatchWriter {
 public:
  BatchWriter(PipelineCore& core, unsigned index);
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  void join();

 private:
  void run();
  bool batch_is_due(std::size_t held, PipelineCore::clock::time_point first) const;
  // Writes records [begin, begin + count) of the held batch. False if it
  // gave up because close() ran out of time.
  bool write(std::size_t begin, std::size_t count);
  void finish(std::size_t begin, std::size_t count, std::uint64_t micros);
  void refuse(std::size_t index, const std::string& message);

  PipelineCore& core_;
  const unsigned index_;
  moodycamel::ConsumerToken token_;
  std::vector<SlotHeader*> slots_;
  std::vector<RecordRef> refs_;
  std::vector<const Column*> text_columns_;
  std::minstd_rand jitter_;
  std::thread thread_;
};

}  // namespace auditpipe::internal
