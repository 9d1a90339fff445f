// RecordPool: the one preallocated slab of fixed-size record slots.
//
// Its capacity is the hard memory cap of a logger: nothing else grows with
// load. The slab is allocated and touched once at construction; after that
// acquire and release allocate nothing.
//
// Free slots form a lock-free LIFO list (recently freed slots are the ones
// still in cache). Acquirers that have to wait queue up in arrival order and
// released slots are handed to them directly, oldest first: a waiter cannot
// be overtaken by threads that keep arriving, so no one starves until its
// deadline while others are served. The list head packs the top slot's index with a counter of
// pops: the counter defeats ABA and, against the count of releases, says how
// many slots are in use without a shared counter on the acquire path.
//
// Invariants: a slot is in exactly one of the states free (on the list),
// filling (owned by one producer), committed (owned by the queue or a
// writer). An acquired slot holds the prototype record's bytes.
//
// A pool can live in a memory-mapped file (a durable pool): committed
// records then survive the process being killed and are found again, still
// committed, when the file is next opened.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/status.h"

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
  RecordPool(std::size_t capacity, std::size_t record_size, std::size_t record_align,
             const std::byte* prototype, const DurableStorage* durable = nullptr);
  ~RecordPool();
  RecordPool(const RecordPool&) = delete;
  RecordPool& operator=(const RecordPool&) = delete;

  // A free slot, now in state filling and holding the prototype record's
  // bytes, or nullptr if none is free. Lock-free.
  SlotHeader* try_acquire() noexcept;

  // Like try_acquire(), but waits (without spinning, in FIFO order behind
  // earlier waiters) until a slot is handed over, `deadline` passes, or
  // `cancel` becomes true. nullptr on timeout/cancel.
  SlotHeader* acquire_until(std::chrono::steady_clock::time_point deadline,
                            const std::atomic<bool>& cancel) noexcept;

  // Marks the slots free and returns them to the free list in one step, or
  // hands them straight to waiting acquirers, oldest first.
  void release(SlotHeader* const* slots, std::size_t count) noexcept;

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
  // Slots not on the free list (filling, queued, or being written).
  std::size_t in_use() const noexcept;
  // Successful acquires so far, modulo 2^32.
  std::uint32_t acquisitions() const noexcept {
    return static_cast<std::uint32_t>(head_.load(std::memory_order_relaxed) >> 32);
  }
  // Acquirers currently waiting in acquire_until(). While it is non-zero,
  // new acquirers should queue behind them rather than call try_acquire().
  std::uint32_t waiters() const noexcept { return waiters_.load(std::memory_order_relaxed); }

  // Whether an acquire found the pool empty since the last call (which
  // clears it). Lets a writer notice a full pool without reading the free
  // list's head, a line the producers write on every acquire.
  bool take_exhausted() noexcept {
    return exhausted_.load(std::memory_order_relaxed) &&
           exhausted_.exchange(false, std::memory_order_relaxed);
  }

 private:
  static constexpr std::uint32_t none = 0xFFFFFFFFu;

  std::size_t capacity_;
  std::size_t record_size_;
  std::size_t record_offset_;
  std::size_t stride_;
  std::size_t slab_bytes_;
  const std::byte* prototype_;
  std::byte* slab_;
  std::unique_ptr<PoolFile> file_;  // durable pools only
  std::optional<SourceTable> sources_;
  std::vector<SlotHeader*> recovered_;
  // Free-list links, one per slot, kept apart from the slots: the writer
  // rewrites them on release, and a producer's pop then reads a dense line
  // of links instead of missing on a slot header the writer just wrote.
  std::unique_ptr<std::atomic<std::uint32_t>[]> links_;

  // Low 32 bits: index of the top free slot (or none); high 32: pops so far.
  alignas(64) std::atomic<std::uint64_t> head_;
  alignas(64) std::atomic<std::uint32_t> released_{0};
  // A blocked acquirer, on its own stack, linked into the FIFO.
  // Its fields are guarded by wait_mutex_ (which the analysis cannot name
  // from here).
  struct Waiter {
    SlotHeader* slot = nullptr;  // set by whoever hands it a slot
    Waiter* next = nullptr;
    detail::CondVar cv;
  };
  // Hands free-list slots to queued waiters, oldest first.
  void serve_waiters_locked() noexcept AUDITPIPE_REQUIRES(wait_mutex_);
  void push_free(SlotHeader* const* slots, std::size_t count) noexcept;

  alignas(64) std::atomic<std::uint32_t> waiters_{0};
  std::atomic<bool> exhausted_{false};
  detail::Mutex wait_mutex_;
  Waiter* wait_head_ AUDITPIPE_GUARDED_BY(wait_mutex_) = nullptr;
  Waiter* wait_tail_ AUDITPIPE_GUARDED_BY(wait_mutex_) = nullptr;
};

}  // namespace auditpipe::internal
