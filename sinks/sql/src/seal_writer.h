// SealWriter: the SQL sink skeleton's sealing (README, Tamper-evident
// tables). It owns `<table>_seals`: creating or checking it, digesting each
// batch a writer stored, and storing the seals in chain order.
//
// A writer that stored a batch queues its seal and goes on. With a pool
// (start_storer()), a thread of its own stores the seals, on a connection
// the pool lends it: a seal's statement and its commit (an fsync on a
// durable server) would otherwise be one more round trip in the writer's
// turn, which bounds the pipeline's rate. With one connection (SQLite),
// the writer stores them itself. Seals are stored by one thread at a time,
// in the order they were queued, those pending at once in one statement
// (the storer thread lets them gather for up to `linger`: a statement and
// a commit per seal was most of what sealing cost a server); a seal is
// linked to the chain only then: its seal_no is one past the newest this
// process knows, its prev_digest that seal's digest. A seal stored alone
// is read back after its insert. If another process sealing the same table
// took that seal_no first, the chain continues from the table's newest
// seal, so several processes can seal one table. A seal whose insert
// failed stays pending and is stored before any later one; while more
// than max_pending wait, write() refuses batches (backlog()), so that no
// more rows are stored unsealed than that, and memory stays bounded.
// At the first prepare(), rows a stopped run stored and no seal covers are
// found; unless another process seals them within a grace period, they are
// then sealed late (one seal marked seal::late_prefix, from the rows read
// back), by the storer thread, the next seal() without one, or close().
// A batch replayed from the spill directory has its keys kept in
// `<table>_unsealed` from before its statement until its seal is stored.
//
// Who may call: SqlSink only (and the DigestThreads it lends SqlSink).
//
// Thread safety: seal(), backlog(), take_digest_thread() and give_back()
// from every writer thread at once, prepare() from the pool's openers,
// keep_replayed() and settle_replayed() from the replaying writer, stats()
// from anywhere, start_storer() once after open, stop_storer() and close()
// after the last write.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/sink/seal.h"
#include "auditpipe/sink/sink.h"
#include "auditpipe/sink/sql_dialect.h"
#include "auditpipe/stats.h"
#include "unsealed_finds.h"

namespace auditpipe {

class SqlConnection;
class DigestThread;

class SealWriter {
 public:
  /// Seals waiting to be stored before write() refuses batches.
  static constexpr std::size_t max_pending = 64;
  /// How long backlog() waits for another thread storing the seals to
  /// bring them under max_pending before it refuses the batch.
  static constexpr std::chrono::milliseconds backlog_wait{1000};
  /// Seals stored in one statement, at most, and their row_hashes' bytes:
  /// a statement and its commit per seal cost PostgreSQL's sink a tenth of
  /// its rows/s (README, Measured).
  static constexpr std::size_t group_max = 32;
  static constexpr std::size_t group_bytes = 1 << 20;
  /// How long the storer thread lets seals gather before it stores them,
  /// unless group_max are pending: seals lag their rows by this much more.
  static constexpr std::chrono::milliseconds linger{100};

  /// Reads the key file for seal=hmac (the URL's, else the environment's).
  /// Throws auditpipe::error naming the file, never the key.
  SealWriter(const SqlDialect& dialect, const seal::SealSettings& settings,
             const TableDescriptor& table, std::string table_location);
  /// Stops the storer thread.
  ~SealWriter();
  SealWriter(const SealWriter&) = delete;
  SealWriter& operator=(const SealWriter&) = delete;

  /// Creates (`create_table`) or checks `<table>_seals` on `c`'s server
  /// and, the first time, reads the chain's newest seal and warns of rows
  /// stored after it. Throws auditpipe::error.
  void prepare(SqlConnection& c, bool create_table) AUDITPIPE_EXCLUDES(mutex_);

  /// The keys a durable pool recovered (sorted; SinkContext::recovered),
  /// before prepare(): rows it will write and seal again are not warned of.
  void expect_recovered(std::span<const RecordRef> keys);

  /// Why a batch must not be stored now (max_pending seals wait, and they
  /// could not be stored on `c` just now, or another thread storing them
  /// did not bring them under max_pending within backlog_wait), or nothing.
  std::optional<std::string> backlog(SqlConnection& c) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// One seal's columns but its place in the chain: a stored batch's keys
  /// and digest. Made from the batch's records (digest()) while they stay
  /// put, linked to the chain when stored.
  struct BatchSeal {
    std::string ranges;  ///< its keys, as runs
    std::int64_t row_count = 0;
    std::string rows_digest;  ///< seal::RowsDigest of its rows
    std::string row_hashes;   ///< each row's fingerprint, in key order
    /// The seal_no and sealed_at of the last try to store it: a try whose
    /// insert was stored but whose answer was lost (a server crash) is
    /// repeated with the same digest, which the read-back then finds,
    /// instead of being taken for another process's seal and stored twice.
    std::int64_t tried_no = 0;
    std::int64_t tried_at = 0;
    /// When seal() queued it (for linger).
    std::chrono::steady_clock::time_point queued_at{};
  };

  /// Digests `batch`: pure, so any thread may, while the batch's records
  /// stay put (the skeleton runs it beside the batch's statement). Throws
  /// auditpipe::error if libcrypto fails.
  BatchSeal digest(const Batch& batch) const;
  /// What digest_stored() made of a batch.
  struct StoredSeal {
    BatchSeal seal;
    std::int64_t kept = 0;     ///< keys holding other values than the batch sent
    std::int64_t missing = 0;  ///< keys the table does not hold at all
  };
  /// After `batch`'s statement on `c` skipped some of its rows (their keys
  /// were there already): its seal made from the rows read back at its
  /// keys, as verify reads them, of those that hold what the batch sent
  /// (`as_sent`: digest()'s). A key holding other values (a caller's key
  /// given again; a row someone put there first) is left to whatever seal
  /// covers it, and counted. Throws if a statement fails.
  StoredSeal digest_stored(SqlConnection& c, const Batch& batch, const BatchSeal& as_sent) const
      AUDITPIPE_EXCLUDES(mutex_);

  /// Before `c` stores a batch replayed from the spill directory: notes
  /// its keys in `<table>_unsealed`, so that a crash before their seal is
  /// stored leaves its rows "not yet sealed" to verify and to the next
  /// start, which seals them late: they lie below keys of their sources
  /// sealed since, where verify would otherwise take them for inserted
  /// rows. A batch tried again is noted once. Nothing where that table is
  /// not kept; if the note cannot be written, warns (once) and the batch
  /// is stored without.
  void keep_replayed(SqlConnection& c, const Batch& batch) noexcept AUDITPIPE_EXCLUDES(mutex_);
  /// A replayed batch's keys are settled: its seal is stored, or (one
  /// record) the sink refused it. Removes the notes whose keys all are
  /// (a batch split to isolate a refused record is noted whole, then in
  /// parts); a failure is a warning, and a start removes them later.
  void settle_replayed(SqlConnection& c, const Batch& batch) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// A thread to digest a batch on while its statement runs (DigestThread:
  /// digest() there), one kept idle since an earlier batch if any; null if
  /// none can be started (then digest() on the writer's own).
  std::unique_ptr<DigestThread> take_digest_thread() noexcept AUDITPIPE_EXCLUDES(digest_mutex_);
  /// Keeps `thread` (its digest finished or waited for) for a later batch.
  void give_back(std::unique_ptr<DigestThread> thread) noexcept AUDITPIPE_EXCLUDES(digest_mutex_);

  /// Queues the seal of a batch `c` just stored. Without a storer thread,
  /// also stores the seals pending, on `c`. Returns its place in the
  /// queue, for stored_by().
  std::uint64_t seal(SqlConnection& c, BatchSeal batch_seal) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// Returns once the seal seal() numbered `ticket` is stored: stores the
  /// seals pending on `c` itself unless another thread is storing them
  /// (then waits for it). Empty when stored; else why not (a statement
  /// failed: the seal stays pending, stored before any later one).
  std::optional<std::string> stored_by(SqlConnection& c, std::uint64_t ticket) noexcept
      AUDITPIPE_EXCLUDES(mutex_);

  /// Runs `store` on a connection idle now and returns true, or returns
  /// false if none is. `store` returns false when a statement failed.
  using Lender = std::function<bool(const std::function<bool(SqlConnection&)>& store)>;
  /// From here on a thread of its own stores the seals pending, on the
  /// connections `lend` gives it, and seal() only queues them.
  void start_storer(Lender lend) AUDITPIPE_EXCLUDES(mutex_);
  /// Ends the storer thread, after the statement it runs, if any, and the
  /// digest threads kept idle. Idempotent.
  void stop_storer() noexcept AUDITPIPE_EXCLUDES(mutex_, digest_mutex_);

  /// Stores what is pending on `idle` (if given), and says what was sealed.
  void close(SqlConnection* idle) noexcept AUDITPIPE_EXCLUDES(mutex_);

  /// For Stats::seals.
  SealStats stats() const AUDITPIPE_EXCLUDES(mutex_);

 private:
  /// Wakes the writers waiting for the thread storing seals (backlog(),
  /// stored_by()): a seal was stored, or storing stopped.
  void note_progress_locked() AUDITPIPE_REQUIRES(mutex_);
  /// When a writer storing seals on its own connection has stored enough:
  /// fewer than `pending_below` wait, or this process has stored
  /// `stored_through` seals. The rest is the storer thread's; a writer
  /// storing everything while others keep adding would hold its own batch
  /// until the producers stop.
  struct Enough {
    std::size_t pending_below;
    std::uint64_t stored_through;
  };
  /// Stores the pending seals in order on `c`, unless another thread is,
  /// until `enough`. False: a statement failed (what is pending stays so).
  bool store_pending(SqlConnection& c, const Enough& enough) AUDITPIPE_EXCLUDES(mutex_);
  /// The same until none is pending.
  bool store_pending(SqlConnection& c) AUDITPIPE_EXCLUDES(mutex_) {
    return store_pending(c, Enough{1, UINT64_MAX});
  }
  /// The storer thread: waits for seals, borrows a connection, stores them;
  /// after a failure it waits longer each time (up to 5 s) before the next try.
  void run_storer() AUDITPIPE_EXCLUDES(mutex_);
  /// Links `p` to the chain and stores it. Throws on a failed statement.
  void store_one(SqlConnection& c, BatchSeal& p) AUDITPIPE_EXCLUDES(mutex_);
  /// Links the seals of `group` (the front of pending_, in order) to the
  /// chain and stores them in one plain INSERT, which stores all or none.
  /// False if it failed (another process took one's seal_no, or anything
  /// else): store_one() then stores them one at a time, and finds those a
  /// statement stored whose answer was lost.
  bool store_group(SqlConnection& c, const std::vector<BatchSeal*>& group)
      AUDITPIPE_EXCLUDES(mutex_);
  /// The clock of sealed_at: microseconds since the epoch.
  static std::int64_t now_us();
  /// The seal_no the next seal gets and the digest it links to.
  std::pair<std::int64_t, std::string> chain_end() const AUDITPIPE_EXCLUDES(mutex_);
  /// `p`'s digest as seal `no` after `prev`; notes the try in `p` (tried_no,
  /// tried_at: `now` unless `no` was tried before).
  std::string link(BatchSeal& p, std::int64_t no, const std::string& prev, std::int64_t now) const;
  /// Seals `first` to `last` are stored, `digest` the last's: the chain's
  /// newest, counted, published.
  void note_stored(std::int64_t first, std::int64_t last, const std::string& digest)
      AUDITPIPE_EXCLUDES(mutex_);
  /// Whether the storer thread stores the pending seals now, or lets more
  /// gather (linger).
  bool group_due_locked(std::chrono::steady_clock::time_point now) const AUDITPIPE_REQUIRES(mutex_);
  /// Throws unless the table's columns (but source_id, seq) are the
  /// record's, in its order: verify encodes the values in the table's.
  /// Returns them.
  std::vector<ColumnSpec> check_columns(SqlConnection& c);
  /// ", and UPDATE" where the seals' insert ends in ON DUPLICATE KEY
  /// UPDATE (MySQL), for messages naming the grants it needs.
  std::string seals_update_grant() const;
  /// Throws "the connection was lost" with `e` if `c` no longer answers a
  /// ping; returns otherwise (the caller then names the cause it found).
  void throw_if_lost(SqlConnection& c, const std::exception& e) const;
  /// That the table's newest seal verifies with this writer's mode and key.
  /// A second host with another key (or seal=hash on a seal=hmac table)
  /// opened without a word, and every seal it made failed verification
  /// for good. Throws when the newest seal's rows are as it sealed them
  /// (their fingerprints match) and its digest does not come out; warns
  /// when the rows were changed (verify's to report); silent when the seal
  /// cannot be read back.
  void check_newest_seal(SqlConnection& c, const std::string& seals,
                         const std::vector<ColumnSpec>& columns) const;
  /// That the seal the anchor file names (if there is one) is in the seals
  /// table with the anchor's digest. Throws auditpipe::error if not: the
  /// newest seals were removed or the chain rewritten since it was written,
  /// which this start's first seal would hide by rewriting the file.
  void check_anchor(SqlConnection& c, const std::string& seals) const;
  /// Finds rows stored and covered by none of the newest seals (a run that
  /// stopped between storing and sealing, or another process still
  /// sealing), warns of them and keeps their keys to be sealed late
  /// (seal_late_when_due()), but those a durable pool recovered, which are
  /// written again and sealed then. `columns` are the table's
  /// (check_columns()).
  void check_tail(SqlConnection& c, const std::string& seals,
                  const std::vector<ColumnSpec>& columns) AUDITPIPE_EXCLUDES(mutex_);
  /// The rows of `source_id` from seq `lo` on that none of `covered` holds
  /// and no durable pool recovered, as runs of neighbouring rows; and how
  /// many they are.
  std::pair<std::vector<seal::SeqRun>, std::int64_t> uncovered(
      SqlConnection& c, std::int64_t source_id, std::int64_t lo,
      std::vector<seal::SeqRun> covered) const;
  /// What earlier starts found and kept (UnsealedFinds) that is still
  /// unsealed, merged into `candidates` (by source, with the oldest seal
  /// each was found after, into `after`); warns of them, and forgets those
  /// no longer unsealed.
  void add_kept_finds(SqlConnection& c,
                      std::map<std::int64_t, std::vector<seal::SeqRun>>& candidates,
                      std::map<std::int64_t, std::int64_t>& after,
                      std::vector<UnsealedFinds::Find>& merged_finds);
  /// Removes `finds` from finds_ (their rows are sealed); a failure is
  /// only a debug line: the next start finds them sealed, and removes them.
  void forget_finds(SqlConnection& c, const std::vector<UnsealedFinds::Find>& finds) const;
  /// Calls `visit` with the ranges of each seal in `seals` (the seals
  /// table, quoted), newest first, a page at a time, until it returns
  /// false; a seal whose ranges do not parse (visit throws
  /// auditpipe::error) is skipped.
  void each_seal(SqlConnection& c, const std::string& seals,
                 const std::function<bool(const std::string&)>& visit) const;
  /// The keys of `source_id` that the seals whose seal_no meets `seal_nos`
  /// (a condition, its values in `params`) hold; a seal whose ranges do
  /// not parse is skipped if `skip_malformed`, else throws auditpipe::error.
  std::vector<seal::SeqRun> keys_sealed(SqlConnection& c, std::int64_t source_id,
                                        const std::string& seal_nos,
                                        std::vector<std::string> params, bool skip_malformed) const;
  /// The keys of `source_id` that the `depth` seals below seal_no `below` hold.
  std::vector<seal::SeqRun> sealed_below(SqlConnection& c, std::int64_t source_id,
                                         std::int64_t below, std::int64_t depth) const;
  /// The keys of `source_id` that seals stored after seal `after` hold.
  std::vector<seal::SeqRun> sealed_since(SqlConnection& c, std::int64_t source_id,
                                         std::int64_t after) const;
  /// The rows check_tail() found, read back to be sealed late.
  struct LateRows;
  /// Adds to `late` the rows of `source_id` in `runs` but the keys of
  /// `sealed_since`.
  void add_late_rows(SqlConnection& c, std::int64_t source_id,
                     const std::vector<seal::SeqRun>& runs,
                     const std::vector<seal::SeqRun>& sealed_since, LateRows& late) const;
  /// Once late_grace has passed since check_tail() (`wait`: after waiting
  /// for it), seals late on `c` the rows it found that no seal stored
  /// since covers. Warns if a statement fails.
  void seal_late_when_due(SqlConnection& c, bool wait) noexcept AUDITPIPE_EXCLUDES(mutex_);
  /// Stores `late` as one seal marked seal::late_prefix. False: it stays
  /// pending (a statement failed), stored before any later seal.
  bool seal_late(SqlConnection& c, LateRows& late) AUDITPIPE_EXCLUDES(mutex_);
  /// check_tail() of a table without seals: warns of rows in it but those
  /// a durable pool recovered.
  void check_unsealed_table(SqlConnection& c);
  /// Of the recovered keys, how many are of `source_id` from `seq` on.
  std::int64_t recovered_from(std::int64_t source_id, std::int64_t seq) const;
  /// The temporary file the anchor is written to before its rename.
  std::string anchor_tmp() const;
  /// The anchor file and the periodic info line (at each thousandth seal),
  /// after seals `first` to `no` were stored, `digest` seal `no`'s.
  void publish(std::int64_t first, std::int64_t no, const std::string& digest);
  /// Says a failed anchor write (`failed`: its errno) when the failing
  /// begins and at most once a minute while it lasts, and when writes
  /// succeed again (`failed` 0).
  void note_anchor_write(int failed);
  /// Whether publish() of seals `first` to `no` writes the info line.
  static bool publish_tells(std::int64_t first, std::int64_t no);

  const SqlDialect& dialect_;
  const seal::SealSettings settings_;
  const TableDescriptor& table_;
  const std::string table_location_;
  /// expect_recovered()'s keys as (source_id, seq), until check_tail() used them.
  std::vector<std::pair<std::int64_t, std::int64_t>> recovered_;
  std::string key_;
  std::string rows_key_;  ///< seal::rows_key(key_) with seal=hmac, else empty
  /// Where a start keeps its finds until it has sealed them late.
  const UnsealedFinds finds_;
  std::string insert_, read_back_, newest_query_;
  /// store_group()'s statement, by the number of seals (from 2).
  std::vector<std::string> group_inserts_;
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
  /// Seals queued by this process: a seal's ticket is the count with it.
  /// Seals are stored in queue order, so ticket t is stored once stored_ >= t.
  std::uint64_t queued_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  bool told_of_others_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  /// check_tail()'s finds, per source as runs of neighbouring rows, until
  /// sealed late; the table's columns to read them back; per source, the
  /// chain's newest seal when it was found (seals after it may cover
  /// them); when they are due; whether finds_ keeps them.
  std::map<std::int64_t, std::vector<seal::SeqRun>> late_candidates_ AUDITPIPE_GUARDED_BY(mutex_);
  std::vector<ColumnSpec> late_columns_ AUDITPIPE_GUARDED_BY(mutex_);
  /// The table's columns as prepare() read them, for digest_stored().
  std::vector<ColumnSpec> columns_ AUDITPIPE_GUARDED_BY(mutex_);
  std::map<std::int64_t, std::int64_t> late_after_ AUDITPIPE_GUARDED_BY(mutex_);
  /// The finds in finds_ that late_candidates_ hold, removed once sealed.
  std::vector<UnsealedFinds::Find> late_finds_ AUDITPIPE_GUARDED_BY(mutex_);
  bool finds_kept_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  /// keep_replayed()'s notes, each with its keys not yet settled, until
  /// settle_replayed() settles them all.
  struct ReplayNote {
    UnsealedFinds::Find find;
    std::vector<seal::SeqRun> unsettled;
  };
  std::vector<ReplayNote> replay_notes_ AUDITPIPE_GUARDED_BY(mutex_);
  bool note_failure_told_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::chrono::steady_clock::time_point late_due_ AUDITPIPE_GUARDED_BY(mutex_);
  bool closed_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  /// The seal the last "sealed through" line named.
  std::int64_t told_no_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::string last_error_ AUDITPIPE_GUARDED_BY(mutex_);
  /// Anchor writes failed in a row, and when that was last said.
  std::uint64_t anchor_failures_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  std::chrono::steady_clock::time_point anchor_warned_at_ AUDITPIPE_GUARDED_BY(mutex_);

  Lender lend_;  ///< set before the storer starts, then read by it alone
  /// The storer waits here for seals, for storing_ to end, or to stop.
  detail::CondVar storer_cv_;
  /// Writers wait here for the thread storing seals to store more of them.
  detail::CondVar progress_cv_;
  std::size_t progress_waiters_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  bool storer_running_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  bool stop_storer_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::thread storer_;  ///< started and joined by the sink's thread

  /// Digest threads between batches: as many as writers digested at once.
  /// Last, so that they end before what digest() reads.
  detail::Mutex digest_mutex_;
  std::vector<std::unique_ptr<DigestThread>> idle_digest_threads_
      AUDITPIPE_GUARDED_BY(digest_mutex_);
};

}  // namespace auditpipe
