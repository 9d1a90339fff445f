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
// never holds back the others. Text is repaired to valid UTF-8 first.
//
// Writer 0 also owns the spill directory's upkeep: it fdatasyncs spilled
// data on the configured interval and, when it has no full batch waiting,
// replays spilled records to the sink, oldest segment first, deleting each
// segment once all of it is stored.
//
// Invariant: a slot leaves the writer only through the pool's release(),
// after the sink stored it or refused it alone (counted), or stays committed
// when close() gives up (then spilled or counted as unwritten).
//
// Thread safety: owns its thread; the constructor starts it, join() ends it
// once PipelineCore::stopping is set.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "auditpipe/sink/sink.h"
#include "durable/spill_reader.h"
#include "pipeline/pipeline_core.h"

namespace auditpipe::internal {

class BatchWriter {
 public:
  BatchWriter(PipelineCore& core, unsigned index);
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  void join();

 private:
  // What becomes of records once the sink has dealt with them.
  struct Outcome {
    virtual void stored(std::size_t begin, std::size_t count) = 0;
    virtual void refused(std::size_t index, const std::string& message) = 0;

   protected:
    ~Outcome() = default;
  };
  struct PoolOutcome;
  struct ReplayOutcome;

  void run();
  bool batch_is_due(std::size_t held, PipelineCore::clock::time_point first);
  // Writes refs[begin, begin + count). False if it gave up because close()
  // ran out of time.
  bool write(std::span<const RecordRef> refs, std::size_t begin, std::size_t count,
             Outcome& outcome);
  void dead_letter(const RecordRef& record, const std::string& message);
  // Replays one chunk of spilled records; false if there was nothing to do.
  bool replay_some();
  void finish_segment();

  PipelineCore& core_;
  const unsigned index_;
  moodycamel::ConsumerToken token_;
  std::vector<SlotHeader*> slots_;
  std::vector<RecordRef> refs_;
  std::vector<const Column*> text_columns_;
  std::minstd_rand jitter_;
  const bool no_nul_;  // the sink cannot store NUL bytes in text
  // Replay state (writer 0).
  std::unique_ptr<SpillReader> reader_;
  std::filesystem::path reader_path_;
  std::vector<RecordRef> replay_refs_;
  std::thread thread_;
};

}  // namespace auditpipe::internal
