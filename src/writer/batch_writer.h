// BatchWriter: one writer thread. It takes committed slots from the intake
// in batches of up to batch_size, finishes each record once (RecordFinisher),
// hands the batch to the sink as one write, and gives the slots back once
// the sink has stored them.
//
// It never spins and never sleeps in a loop: with nothing to do it waits on
// the intake's WriterSignal until producers have committed enough for a
// batch or the flush interval passes. How many records make a batch is the
// BatchSizer's call: as many as keep one write near the latency target, so
// slots flow back to waiting producers write by write. A failed write is retried with capped
// exponential backoff and jitter for as long as it takes (while the pool
// fills and the overflow policy applies upstream); a batch the sink refuses
// as data is split in halves until the refused records are isolated, so one
// bad record never holds back the others. Refused records go to the
// dead-letter file, if there is one.
//
// The writer given the spill directory (writer 0) also replays spilled
// records through the same write loop: whenever it has no batch due, and
// after every live batch it writes while records wait on disk, so the
// spill gets at least half of that writer's turns under load and drains
// whenever the database stores faster than the producers produce.
//
// Invariant: a slot leaves the writer only through Intake::release(), after
// the sink stored it or refused it alone (counted), or stays committed when
// close() gives up (then spilled or counted as unwritten).
//
// Created and joined by the pipeline; reads other rooms only through the
// references it is given.
//
// Thread safety: owns its thread; the constructor starts it, join() ends it
// once WriterControl::stop() (or give_up()) has been called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/options.h"
#include "auditpipe/sink/sink.h"
#include "durable/dead_letter_file.h"
#include "durable/spill.h"
#include "observe/counters.h"
#include "producer/intake.h"
#include "writer/batch_sizer.h"
#include "writer/record_finisher.h"
#include "writer/writer_control.h"

namespace auditpipe::internal {

// What a writer works with; all of it outlives the writer.
struct WriterParts {
  const TableDescriptor& table;
  const Options& options;
  Sink& sink;
  Intake& intake;
  WriterControl& control;
  const RecordFinisher& finisher;
  Counters& counters;
  DeadLetterFile* dead_letters;  // nullptr: refused records are only counted and logged
};

class BatchWriter {
 public:
  // `replay`: the spill directory this writer replays (nullptr: none).
  BatchWriter(const WriterParts& parts, unsigned index, Spill* replay);
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  void join();

 private:
  // What becomes of records once the sink has dealt with them.
  struct Outcome {
    virtual void stored(std::size_t begin, std::size_t count) = 0;
    virtual void refused(std::size_t index, const std::string& message) = 0;
    // The records come from the spill directory (Batch::replayed).
    virtual bool replayed() const { return false; }

   protected:
    ~Outcome() = default;
  };
  struct PoolOutcome;
  struct ReplayOutcome;

  void run();
  bool batch_is_due(std::size_t held, WriterControl::clock::time_point first);
  // Replays one batch of spilled records; false if there was none (or
  // close() gave up).
  bool replay_one_batch() noexcept;
  // Finishes the held records and writes them; false if close() gave up.
  bool write_held(std::size_t held);
  // Writes refs[begin, begin + count). False if it gave up because close()
  // ran out of time.
  bool write(std::span<const RecordRef> refs, std::size_t begin, std::size_t count,
             Outcome& outcome);
  void dead_letter(const RecordRef& record, const std::string& message) noexcept;

  const WriterParts parts_;
  const unsigned index_;
  Spill* const replay_;
  moodycamel::ConsumerToken token_;
  std::vector<SlotHeader*> slots_;
  std::vector<RecordRef> refs_;
  BatchSizer sizer_;
  std::minstd_rand jitter_;
  std::thread thread_;
};

}  // namespace auditpipe::internal
