// Options of a Logger: the memory cap, batching, and what happens when the
// pool is full.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "auditpipe/export.h"

namespace auditpipe {

/// What acquire() does when every slot of the pool is in use.
enum class Overflow {
  block,  ///< wait for a free slot up to max_wait, then give up (counted as timed_out)
  drop,   ///< give up at once; the record is counted as dropped
  fail,   ///< give up at once and tell the caller (Status::pool_exhausted), counted as
          ///< pool_exhausted
  spill,  ///< write the record to the spill directory instead (counted as spilled); it is
          ///< written to the database later, in order. If the directory is full: as block.
};

/// The policy's name, for messages.
AUDITPIPE_EXPORT std::string_view to_string(Overflow overflow) noexcept;

/// How a Logger behaves: pool size, batching, writers, overflow policy, waits, spill directory,
/// durable pool (README, Options).
/// A duration longer than 100 years (std::chrono::milliseconds::max() for
/// "no limit") is taken as 100 years (Pipeline::longest_wait).
struct AUDITPIPE_EXPORT Options {
  /// Slots in the record pool: the hard cap on records held in memory.
  std::size_t capacity = 65536;
  /// Most records handed to the sink in one write. 0: min(5000, capacity/8)
  /// (5000 was fastest on every MySQL and PostgreSQL write path on the
  /// development machine; writes slower than write_latency_target make
  /// batches smaller than this).
  std::size_t batch_size = 0;
  /// How long one write should take: while writes take longer, batches get
  /// smaller (down to 1% of batch_size), and grow back towards batch_size
  /// while they are quicker. Slots go back to the pool as each write is
  /// stored, so this bounds how long a producer waits for one under
  /// saturation. Batches are not shrunk where a statement's fixed cost (the
  /// round trip, the commit) alone exceeds the target: that would cost
  /// throughput and shorten no write. Unset: max_wait / 10 (at least 10 ms).
  /// Zero: every batch is as large as batch_size.
  std::optional<std::chrono::milliseconds> write_latency_target;
  /// Longest a committed record waits before the writer hands it over, even
  /// if the batch is not full. Also how long an idle writer sleeps.
  std::chrono::milliseconds flush_interval{100};
  /// Writer threads; each takes its own batches (and, for pooled sinks, its
  /// own connection). 0: as many as the sink works best with
  /// (Sink::preferred_writers(): 2 for MySQL and PostgreSQL, 1 for SQLite).
  unsigned writers = 0;
  /// What acquire()/log() do with the pool full (see Overflow).
  Overflow overflow = Overflow::block;
  /// With Overflow::block: the longest acquire() waits for a free slot.
  std::chrono::milliseconds max_wait{500};
  /// How long the destructor's close() may take to drain.
  std::chrono::milliseconds close_timeout{30000};
  /// Backoff between retries of a failed write: doubles from the first to the
  /// cap, with jitter.
  std::chrono::milliseconds retry_backoff_initial{10};
  /// The cap of that backoff.
  std::chrono::milliseconds retry_backoff_max{5000};
  /// Base of the source ids this logger stamps (one source per producer
  /// thread): from 0 to 2^63 - 2^32 - 1. Unset: random, so restarts and other
  /// processes do not collide.
  /// A durable pool's file is made with it (random if unset) and keeps it:
  /// a restart on an existing file continues that file's sources, and a
  /// different value here is warned of and not used. Fixed without a pool
  /// file that goes on (none, or a new one), its sources number from seq 0
  /// again: the SQL sinks refuse to start if the table has rows of them.
  std::optional<std::int64_t> source_id_base;

  /// A directory for records that cannot go to the database now: with
  /// Overflow::spill, records that find the pool full; with any policy,
  /// records close() could not write before its deadline. Spilled records
  /// are written to the database when it takes writes again, and at the
  /// next start, oldest first. Empty: no spilling.
  std::filesystem::path spill_path;
  /// Cap on the spill directory; past it, spilling is refused (counted).
  std::uint64_t spill_max_bytes = std::uint64_t{1} << 30;
  /// Size of one spill segment file.
  std::uint64_t spill_segment_bytes = std::uint64_t{64} << 20;
  /// Spilled data is fdatasync'ed at least this often.
  std::chrono::milliseconds spill_fsync_interval{200};

  /// A file that records the database refuses go to, one JSON line each,
  /// with the server's message. Empty: they are only counted and logged.
  std::filesystem::path dead_letter_path;

  /// Log a one-line summary of stats() through the diagnostics logger this
  /// often (at info level). Zero: never.
  std::chrono::milliseconds summary_interval{0};

  /// Health is `down` once committed records wait and no write has been
  /// stored for this long, whatever the writers are waiting in (a retry
  /// backoff, a connection pool's lease wait, a server that does not answer).
  std::chrono::milliseconds health_down_after{5000};

  /// Start when the database cannot be reached (auditpipe::unreachable from
  /// the sink): health is `down`, records wait under the overflow policy,
  /// and the writers connect, create or check the table and write once it
  /// answers. Unset: only when records have somewhere to wait (spill_path
  /// or durable_path). Configuration errors always throw.
  std::optional<bool> start_while_unreachable;

  /// Keep the record pool in this file (created if missing): every record
  /// whose commit() returned survives the process being killed and is
  /// written first when a logger next opens the file. Empty: memory only.
  std::filesystem::path durable_path;
};

}  // namespace auditpipe
