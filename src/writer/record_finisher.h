// RecordFinisher: the one step that makes a committed record what a sink,
// a spill segment or a dead-letter line may see. Producers fill records as
// fast as they can; what costs time is done here, once, off their path:
//   - fast_now() readings (raw TSC cycles) become wall time;
//   - text fields become valid UTF-8 (invalid sequences -> U+FFFD), and
//     free of NUL bytes if the sink cannot store them; both are counted.
// It also counts the record's text fields cut to fit and those filled from
// a null C string, once per record whatever becomes of it (stored, refused
// by the database, spilled): a mark in each field keeps a second finish
// from counting it again.
//
// Finishing is idempotent: a finished record passes through unchanged, so
// records replayed from a spill segment go through it again safely.
//
// Called by the writers (every batch), the spill path (before a record goes
// to disk, where cycle counts would outlive the boot), and close().
//
// Thread safety: immutable after construction; finish() from any thread on
// a record that thread owns.
#pragma once

#include <cstddef>
#include <vector>

#include "auditpipe/column.h"
#include "common/tsc_clock.h"
#include "observe/counters.h"

namespace auditpipe::internal {

class RecordFinisher {
 public:
  // `sink_accepts_nul`: Sink::accepts_nul_in_text().
  RecordFinisher(const TableDescriptor& table, bool sink_accepts_nul, Counters& counters);

  // The calibration to finish a batch with (taken once per batch), or an
  // empty one when the record has no timestamp columns.
  TscClock::Snapshot clock() const;
  bool has_timestamps() const noexcept { return !timestamp_columns_.empty(); }

  // Finishes `record` in place.
  void finish(std::byte* record, const TscClock::Snapshot& clock) const noexcept;
  // The same, with a calibration of its own (one record: the spill path).
  void finish(std::byte* record) const noexcept { finish(record, clock()); }

 private:
  void repair_text(std::byte* record, const Column& c) const noexcept;

  std::vector<const Column*> timestamp_columns_;
  std::vector<const Column*> text_columns_;
  const bool no_nul_;
  Counters& counters_;
};

}  // namespace auditpipe::internal
