// TscClock: turns fast_now() readings (raw TSC cycles) into wall time.
//
// Calibrated once against CLOCK_REALTIME over a few milliseconds, then
// re-anchored at most once a second while in use: each conversion is
// anchor time + (cycles since the anchor) x (microseconds per cycle, from
// the longest baseline measured). Readings are converted by the writer
// within about a flush interval of being taken, so drift between anchors
// is negligible; the wall clock's own steps (NTP) are picked up at the next
// anchor.
//
// Thread safety: snapshot() from any thread; a Snapshot is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "auditpipe/column.h"
#include "auditpipe/timestamp.h"

namespace auditpipe::internal {

class TscClock {
 public:
  struct Snapshot {
    std::uint64_t anchor_tsc = 0;
    std::int64_t anchor_micros = 0;
    double micros_per_tick = 0;

    // The wall time of a fast_now() reading; anything else as it is. A value
    // with the reading's tag that no fast_now() of this calibration could
    // have taken (see plausible()) is a time the application stored itself,
    // below -2^62 us, and stays exactly what it was.
    timestamp resolve(timestamp t) const noexcept {
      if (!t.pending()) return t;
      const auto tsc = static_cast<std::uint64_t>(t.micros) & timestamp::pending_mask;
      if (!plausible(tsc)) return t;
      const double delta = static_cast<double>(static_cast<std::int64_t>(
                               tsc - (anchor_tsc & timestamp::pending_mask))) *
                           micros_per_tick;
      return timestamp{anchor_micros + static_cast<std::int64_t>(delta)};
    }

    // Whether `tsc` can be a reading of this calibration: taken after the
    // machine's first second of counting (a cleared or small value, such as
    // timestamp{INT64_MIN}'s, is not) and at most an hour after the anchor
    // (readings are converted within about a flush interval; a durable
    // pool's saved anchor is at most a second older than its last reading).
    // An empty calibration (no usable TSC) reads nothing.
    bool plausible(std::uint64_t tsc) const noexcept {
      if (!(micros_per_tick > 0)) return false;
      const double ticks_per_second = 1e6 / micros_per_tick;
      const double anchor = static_cast<double>(anchor_tsc & timestamp::pending_mask);
      const double reading = static_cast<double>(tsc);
      return reading > ticks_per_second && reading <= anchor + 3600 * ticks_per_second;
    }
  };

  // The current calibration (calibrating first if needed); an empty one
  // when fast_now() does not read the TSC, so that nothing is converted.
  static Snapshot snapshot();
};

// Converts the pending readings in a record's timestamp `columns` with
// `clock`; other values stay as they are.
void resolve_timestamps(std::byte* record, std::span<const Column* const> columns,
                        const TscClock::Snapshot& clock) noexcept;

}  // namespace auditpipe::internal
