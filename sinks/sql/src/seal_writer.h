// SealWriter: the SQL sink skeleton's sealing (README, Tamper-evident
// tables). It owns `<table>_seals`: creating or checking it, digesting each
// batch a writer stored, and storing the seals in chain order.
//
// Seals are stored by one writer thread at a time (whichever stored a batch
// while no other was storing seals; the others leave theirs pending). The
// batches pending then become one seal (up to max_seal_rows rows), so
// that under load seals are fewer and larger instead of one statement per
// batch; each seal is linked to the chain only then: its seal_no is one past the
// newest this process knows, its prev_digest that seal's digest. The seal
// is read back after its insert. If another process sealing the same table
// took that seal_no first, the chain continues from the table's newest
// seal, so several processes can seal one table. A seal whose insert
// failed stays pending and is stored before any later one; while more
// than max_pending wait, write() refuses batches (backlog()), so that no
// more rows are stored unsealed than that, and memory stays bounded.
//
// Who may call: SqlSink only.
//
// Thread safety: seal() and backlog() from every writer thread at once,
// prepare() from the pool's openers, stats() from anywhere, close() after
// the last write.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_dialect.h"
#include "auditpipe/stats.h"

namespace auditpipe {

class SqlConnection;

class SealWriter {
 public:
  /// Seals waiting to be stored before write() refuses batches.
  static constexpr std::size_t max_pending = 64;
  /// Rows one seal takes from several pending batches (one batch may have more).
  static constexpr std::size_t max_seal_rows = 50000;

  /// Reads the key file for seal=hmac (the URL's, else the environment's).
  /// Throws auditpipe::error naming the file, never the key.
  SealWriter(const SqlDialect& dialect, const seal::SealSettings& settings,
             const TableDescriptor& table, std::string table_location);

  /// Creates (`create_table`) or checks `<table>_seals` on `c`'s server
  /// and, the first time, reads the chain's newest seal and warns of rows
  /// stored after it. Throws auditpipe::error.
  void prepare(SqlConnection& c, bool create_table) AUDITPIPE_EXCLUDES(mutex_);

  /// Why a batch must not be stored now (more than max_pending seals wait,
  /// and storing them on `c` failed), or nothing.
  std::optional<std::string> backlog(SqlConnection& c) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// One stored row, as a seal holds it.
  struct SealedRow {
    std::int64_t source_id;
    std::int64_t seq;
    seal::RowHash hash;
  };
  /// A stored batch's rows, hashed, in key order: what its seal is made of.
  struct BatchSeal {
    std::vector<SealedRow> rows;
  };

  /// Digests `batch`: pure, so any thread may, while the batch's records
  /// stay put (the skeleton runs it beside the batch's statement). Throws
  /// auditpipe::error if libcrypto fails.
  BatchSeal digest(const Batch& batch) const;

  /// Queues the seal of a batch `c` just stored, and stores the seals pending.
  void seal(SqlConnection& c, BatchSeal batch_seal) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// Stores what is pending on `idle` (if given), and says what was sealed.
  void close(SqlConnection* idle) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// For Stats::seals.
  SealStats stats() const AUDITPIPE_EXCLUDES(mutex_);

 private:
  /// One seal's columns, made from one or more batches.
  struct Seal {
    std::string ranges;  ///< its keys, as runs
    std::int64_t row_count = 0;
    std::string rows_digest;  ///< seal::RowsDigest of its rows
    std::string row_hashes;   ///< each row's fingerprint, in key order
  };
  /// The seal of `parts`' rows together (a key in several once).
  static Seal merge(const std::vector<const BatchSeal*>& parts);

  /// Stores the pending seals in order on `c`, unless another thread is.
  void store_pending(SqlConnection& c) AUDITPIPE_EXCLUDES(mutex_);
  /// Links `p` to the chain and stores it. Throws on a failed statement.
  void store_one(SqlConnection& c, const Seal& p) AUDITPIPE_EXCLUDES(mutex_);
  /// Warns of rows stored after the newest seals (a run that stopped
  /// between storing and sealing, or one still writing).
  void check_tail(SqlConnection& c, const std::string& seals);
  /// The anchor file and the periodic info line, after seal `no` was stored.
  void publish(std::int64_t no, const std::string& digest);

  const SqlDialect& dialect_;
  const seal::SealSettings settings_;
  const TableDescriptor& table_;
  const std::string table_location_;
  std::string key_;
  std::string insert_, read_back_, newest_query_;
  bool returning_ = false;  ///< insert_ returns the row it stored

  mutable detail::Mutex mutex_;
  bool ready_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  bool storing_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  /// Pushed at the back by any writer, popped at the front by the one
  /// storing (a deque keeps the front's address while others push).
  std::deque<BatchSeal> pending_ AUDITPIPE_GUARDED_BY(mutex_);
  std::int64_t newest_no_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  ///< the chain's newest seal known
  std::string newest_digest_ AUDITPIPE_GUARDED_BY(mutex_);
  std::uint64_t stored_ AUDITPIPE_GUARDED_BY(mutex_) = 0;  ///< by this process
  bool told_of_others_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  bool closed_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::string last_error_ AUDITPIPE_GUARDED_BY(mutex_);
};

}  // namespace auditpipe
