// RecordPool: the one preallocated slab of fixed-size record slots.
//
// Its capacity is the hard memory cap of a logger: nothing else grows with
// load. The slab is allocated and touched once at construction; after that
// acquire and release allocate nothing.
//
// Free slots live in a depot (a LIFO stack under a mutex: recently freed
// slots are the ones still in cache) and in producer threads' magazines
// (SlotCache). A producer takes slots from its own magazine with plain
// loads and stores; only when it is empty does it go to the depot, which
// fills it with up to a magazine's worth at once. Writers give stored
// slots back to the depot a whole batch at a time. So the common acquire
// executes no locked instruction and writes no shared line, and the
// mutex is taken once per magazine and once per batch.
//
// Acquirers that have to wait queue up in arrival order and released slots
// are handed to them directly, oldest first: a waiter cannot be overtaken
// by threads that keep arriving. A waiter (and an acquirer finding the
// depot empty, and close()) first reclaims what other threads' magazines
// hold, idle or exited threads' included, so a parked slot never makes
// anyone wait or drop. While anyone waits, magazines are not refilled.
//
// Invariants: a slot is in exactly one of: the depot, one magazine (both
// state free), filling (owned by one producer), committed (owned by the
// queue or a writer). depot + cached + in use = capacity. An acquired slot
// holds the prototype record's bytes.
//
// A pool can live in a memory-mapped file (a durable pool): committed
// records then survive the process being killed and are found again, still
// committed, when the file is next opened. A slot's state is in the slot,
// so a magazine changes nothing there: its slots are free on disk.
//
// Thread safety: every member function may be called from any thread,
// except that a SlotCache is passed only by the thread that owns it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/status.h"
#include "producer/slot_cache.h"

namespace auditpipe::internal {

enum class SlotState : std::uint32_t { free = 0, filling = 1, committed = 2 };

// Bookkeeping in front of every record in the slab.
struct SlotHeader {
  std::atomic<std::uint32_t> state;
  std::atomic<std::uint32_t> generation;  // bumped each time the slot is freed
  std::uint32_t index;
  std::int64_t source_id;  // stamped at commit
  std::int64_t seq;        // stamped at commit
};

class PoolFile;

// Where a durable pool lives, and the layout its records must have.
struct DurableStorage {
  std::filesystem::path path;
  std::uint64_t fingerprint = 0;
  // Options::source_id_base: what a new file's sources are numbered from.
  std::optional<std::int64_t> source_id_base;
};

// A record source (a producer thread's source_id and next seq) kept in a
// durable pool's file, so seqs continue across restarts.
struct PersistedSource {
  std::int64_t source_id;
  std::atomic<std::int64_t> next_seq;
};

// The persisted sources of a durable pool: entries[0, *count) are in use.
struct SourceTable {
  std::int64_t base;  // source_id of entry i is base + i
  std::atomic<std::uint64_t>* count;
  PersistedSource* entries;
  std::size_t capacity;
};

class RecordPool {
 public:
  // The largest capacity: slot indices are 32-bit and one value means "none".
  static constexpr std::size_t max_capacity = 0xFFFFFFFEu;

  // Throws auditpipe::error if the slab cannot be allocated or the sizes are
  // unusable, or a durable file cannot be used.
  // How magazine owners are ordered against reclaimers: by membarrier
  // where the kernel has it (automatic), else, or when asked (fence), by a
  // fence in every pop and push.
  enum class Barrier { automatic, fence };

  RecordPool(std::size_t capacity, std::size_t record_size, std::size_t record_align,
             const std::byte* prototype, const DurableStorage* durable = nullptr,
             Barrier barrier = Barrier::automatic);
  ~RecordPool();
  RecordPool(const RecordPool&) = delete;
  RecordPool& operator=(const RecordPool&) = delete;

  // Magazines: a producer thread's cache is attached once, before its
  // first acquire, and detached (its slots returned) before it is freed.
  void attach(SlotCache& cache) noexcept;
  void detach(SlotCache& cache) noexcept;
  // Returns a magazine's slots to the depot (its owner, e.g. at thread exit).
  void flush(SlotCache& cache) noexcept;

  // A free slot, now in state filling and holding the prototype record's
  // bytes, or nullptr if none is free (or acquirers are waiting: queue
  // behind them). From the caller's own magazine when it holds one.
  SlotHeader* try_acquire(SlotCache& cache) noexcept {
    SlotHeader* s = cache.pop(fence_);
    if (s == nullptr) [[unlikely]] {
      s = refill(cache);
      if (s == nullptr) return nullptr;
    }
    prepare(s);
    return s;
  }
  // The same without a magazine: straight from the depot.
  SlotHeader* try_acquire() noexcept;

  // Like try_acquire(), but waits (without spinning, in FIFO order behind
  // earlier waiters) until a slot is handed over, `deadline` passes, or
  // `cancel` becomes true. nullptr on timeout/cancel.
  SlotHeader* acquire_until(std::chrono::steady_clock::time_point deadline,
                            const std::atomic<bool>& cancel) noexcept;

  // Marks the slots free and hands them to waiting acquirers, oldest
  // first, and the rest to the depot, in one step.
  void release(SlotHeader* const* slots, std::size_t count) noexcept;
  // The owner gives one slot back into its own magazine (or the depot,
  // when the magazine is full).
  void give_back(SlotCache& cache, SlotHeader* s) noexcept {
    mark_free(s);
    if (!cache.push(s, fence_)) [[unlikely]]
      to_depot(s);
  }

  // Empties every magazine into the depot, after a barrier that every
  // thread passes: an acquire that completed before it is visible after
  // it (close() relies on this: it sets its flag, then calls this).
  void reclaim_all() noexcept;

  // Wakes every waiting acquirer so it can re-check its cancel flag.
  void wake_waiters() noexcept;

  std::byte* record(SlotHeader* slot) const noexcept {
    return reinterpret_cast<std::byte*>(slot) + record_offset_;
  }
  SlotHeader* slot_of(const std::byte* record) const noexcept {
    return reinterpret_cast<SlotHeader*>(const_cast<std::byte*>(record) - record_offset_);
  }
  // Whether `record` points into this pool's slab.
  bool contains(const std::byte* record) const noexcept {
    return record >= slab_ && record < slab_ + slab_bytes_;
  }
  SlotHeader* slot(std::size_t index) const noexcept {
    return reinterpret_cast<SlotHeader*>(slab_ + index * stride_);
  }

  // Durable pools: the slots found committed when the file was opened
  // (records of an earlier run, not yet written). Once; then empty.
  std::vector<SlotHeader*> take_recovered();
  // Durable pools: the persisted record sources; nullptr otherwise.
  SourceTable* source_table() noexcept { return sources_ ? &*sources_ : nullptr; }
  bool durable() const noexcept { return file_ != nullptr; }
  // Durable pools: the file; nullptr otherwise.
  PoolFile* file() noexcept { return file_.get(); }

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t slot_stride() const noexcept { return stride_; }
  // Where the slots are: depot + cached + in_use == capacity.
  struct Census {
    std::size_t in_depot = 0;
    std::size_t cached = 0;  // parked in magazines
    std::size_t in_use = 0;  // filling, queued, being written, or recovered
    std::size_t magazines = 0;
  };
  Census census() const noexcept;
  // Slots neither in the depot nor in a magazine.
  std::size_t in_use() const noexcept { return census().in_use; }
  // Slots that left the depot (into magazines or straight to acquirers),
  // modulo 2^32. Moves once per magazine, not per acquire.
  std::uint32_t acquisitions() const noexcept {
    return handed_out_.load(std::memory_order_relaxed);
  }
  // Slots taken back from other threads' magazines so far.
  std::uint64_t reclaimed() const noexcept { return reclaimed_.load(std::memory_order_relaxed); }
  // Slots a magazine parks at most (0: magazines off).
  std::uint32_t magazine_size() const noexcept { return magazine_; }
  // Whether owners fence (no membarrier here, or Barrier::fence).
  bool fences() const noexcept { return fence_; }
  // Acquirers currently waiting in acquire_until(). While it is non-zero,
  // new acquirers should queue behind them rather than call try_acquire().
  std::uint32_t waiters() const noexcept { return waiters_.load(std::memory_order_relaxed); }
  // Counts a waiter that never leaves, so that every acquirer from now on
  // takes its slow path and none touches the pool: a fork() child's copy
  // of it, which is the parent's (Intake::orphan).
  void divert_acquirers() noexcept { waiters_.fetch_add(1, std::memory_order_relaxed); }

  // Whether an acquire found the pool empty since the last call (which
  // clears it). Lets a writer notice a full pool without taking the
  // depot's mutex.
  bool take_exhausted() noexcept {
    return exhausted_.load(std::memory_order_relaxed) &&
           exhausted_.exchange(false, std::memory_order_relaxed);
  }

 private:
  // The prototype's bytes, state filling: done by the acquiring thread, not
  // by the writer at release. A writer that wrote the record's lines would
  // leave them dirty in its own cache for the next producer to fetch
  // (measured: +60 ns/record). Always, even when the caller's mapping
  // writes every column: the copy writes whole lines at once, and skipping
  // it made the producer slower (bench/hot_path: p50 ~95 -> ~120 ns), its
  // field stores then waiting on each line one by one.
  void prepare(SlotHeader* s) noexcept {
    s->state.store(static_cast<std::uint32_t>(SlotState::filling), std::memory_order_relaxed);
    std::memcpy(record(s), prototype_, record_size_);
  }
  static void mark_free(SlotHeader* s) noexcept {
    // Only the thread releasing the slot changes it: no read-modify-write.
    s->generation.store(s->generation.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    s->state.store(static_cast<std::uint32_t>(SlotState::free), std::memory_order_release);
  }
  SlotHeader* refill(SlotCache& cache) noexcept;
  void to_depot(SlotHeader* s) noexcept;
  // Free slots to waiters, oldest first, then onto the depot.
  void give_locked(SlotHeader* const* slots, std::size_t count) noexcept AUDITPIPE_REQUIRES(mutex_);
  // Hands depot slots to queued waiters, oldest first.
  void serve_waiters_locked() noexcept AUDITPIPE_REQUIRES(mutex_);
  // The depot is empty: take what the magazines hold (all of them when
  // `always`, else only if some seem to hold slots). Returns how many.
  std::size_t reclaim_locked(bool always) noexcept AUDITPIPE_REQUIRES(mutex_);
  void empty_locked(SlotCache& cache) noexcept AUDITPIPE_REQUIRES(mutex_);
  SlotHeader* pop_depot_locked() noexcept AUDITPIPE_REQUIRES(mutex_);
  SlotHeader* first_free_locked() noexcept AUDITPIPE_REQUIRES(mutex_);

  std::size_t capacity_;
  std::size_t record_size_;
  std::size_t record_offset_;
  std::size_t stride_;
  std::size_t slab_bytes_;
  // The anonymous mapping the slab lies in (without a durable file).
  std::byte* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const std::byte* prototype_;
  std::byte* slab_;
  std::uint32_t magazine_ = 0;
  // No membarrier in this kernel: magazine owners fence instead.
  bool fence_ = false;
  std::unique_ptr<PoolFile> file_;  // durable pools only
  std::optional<SourceTable> sources_;
  std::vector<SlotHeader*> recovered_;

  // A blocked acquirer, on its own stack, linked into the FIFO.
  // Its fields are guarded by mutex_ (which the analysis cannot name
  // from here).
  struct Waiter {
    SlotHeader* slot = nullptr;  // set by whoever hands it a slot
    Waiter* next = nullptr;
    detail::CondVar cv;
  };

  // The depot. Its mutex is taken per magazine and per released batch.
  alignas(64) mutable detail::Mutex mutex_;
  std::unique_ptr<SlotHeader*[]> depot_ AUDITPIPE_GUARDED_BY(mutex_);
  std::size_t depot_size_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
  SlotCache* caches_ AUDITPIPE_GUARDED_BY(mutex_) = nullptr;
  Waiter* wait_head_ AUDITPIPE_GUARDED_BY(mutex_) = nullptr;
  Waiter* wait_tail_ AUDITPIPE_GUARDED_BY(mutex_) = nullptr;
  std::atomic<std::uint32_t> handed_out_{0};
  std::atomic<std::uint64_t> reclaimed_{0};
  std::atomic<bool> exhausted_{false};
  // Read by every acquire: on a line of its own, written only by waiters.
  alignas(64) std::atomic<std::uint32_t> waiters_{0};
};

}  // namespace auditpipe::internal
