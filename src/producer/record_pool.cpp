#include "producer/record_pool.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "auditpipe/status.h"
#include "durable/pool_file.h"

namespace auditpipe::internal {

namespace {

constexpr std::size_t cache_line = 64;
constexpr std::size_t huge_page = std::size_t{2} << 20;

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

// Whether this process may use MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux
// 4.14+, registered once per process). Without it magazine owners fence.
bool membarrier_ready() {
  static const bool ready = [] {
    const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
        (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0) {
      return false;
    }
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return ready;
}
// Asked as the library loads: a child forked while another thread asked
// first would wait for ever for that thread's static initialization.
[[maybe_unused]] const bool membarrier_asked_at_load = membarrier_ready();

// Every thread of the process passes a full barrier before this returns.
void barrier_all_threads(bool fence) {
  if (fence || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

// Magazines park at most 1/64 of the pool each (32 slots from a pool of
// 2048 on): a hundred idle threads then hold at most a few percent of it,
// and a magazine's refill, one mutex round trip, is shared by 32 acquires.
std::uint32_t magazine_for(std::size_t capacity) {
  const std::size_t m = std::min<std::size_t>(SlotCache::max_slots, capacity / 64);
  return static_cast<std::uint32_t>(m < 2 ? 0 : m);
}

}  // namespace

RecordPool::RecordPool(std::size_t capacity, std::size_t record_size, std::size_t record_align,
                       const std::byte* prototype, const DurableStorage* durable, Barrier barrier)
    : capacity_(capacity), record_size_(record_size), prototype_(prototype) {
  if (capacity == 0 || capacity > max_capacity) {
    throw error("auditpipe: pool capacity must be between 1 and " + std::to_string(max_capacity) +
                ", got " + std::to_string(capacity));
  }
  if (record_align == 0 || (record_align & (record_align - 1)) != 0 || record_align > 4096) {
    throw error("auditpipe: record alignment must be a power of two up to 4096, got " +
                std::to_string(record_align));
  }
  record_offset_ = align_up(sizeof(SlotHeader), record_align);
  // Whole cache lines per slot: producers filling neighbouring slots never
  // share a line.
  stride_ = align_up(record_offset_ + record_size, std::max(cache_line, record_align));
  if (capacity > (SIZE_MAX / 2) / stride_) {
    throw error("auditpipe: pool of " + std::to_string(capacity) + " records of " +
                std::to_string(record_size) + " bytes is too large");
  }
  slab_bytes_ = capacity * stride_;
  bool existed = false;
  if (durable != nullptr) {
    file_ = std::make_unique<internal::PoolFile>(durable->path, durable->fingerprint, capacity,
                                                 stride_, durable->source_id_base);
    slab_ = file_->slab();
    existed = file_->existed();
    sources_ = file_->sources();
  } else {
    // Mapped with room to start on a huge-page boundary, and offered to
    // the kernel for transparent huge pages: a pool of tens of megabytes
    // then costs a few dozen page faults at start instead of thousands,
    // and the producers' and writers' accesses across it a few TLB
    // entries instead of one per 4 KiB. Where THP is off, nothing changes.
    map_bytes_ = slab_bytes_ >= huge_page ? slab_bytes_ + huge_page : slab_bytes_;
    void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw error("auditpipe: cannot allocate the record pool (" + std::to_string(slab_bytes_) +
                  " bytes): " + std::strerror(errno));
    }
    map_ = static_cast<std::byte*>(p);
    slab_ = map_;
    if (map_bytes_ != slab_bytes_) {
      slab_ =
          reinterpret_cast<std::byte*>(align_up(reinterpret_cast<std::uintptr_t>(map_), huge_page));
      madvise(slab_, slab_bytes_, MADV_HUGEPAGE);
    }
  }
  // Touch every page now, so page faults never land on a producer and the
  // resident size is flat from the start. Slots of an earlier run that were
  // committed are kept for recovery; ones half-filled when it died are freed.
  magazine_ = magazine_for(capacity);
  fence_ = magazine_ != 0 && (barrier == Barrier::fence || !membarrier_ready());
  depot_ = std::make_unique<SlotHeader*[]>(capacity);
  detail::MutexLock lock(mutex_);
  // Pushed in reverse, so the first acquires take the lowest slots.
  for (std::size_t i = capacity; i-- > 0;) {
    SlotHeader* s = slot(i);
    const bool committed = existed && s->state.load(std::memory_order_relaxed) ==
                                          static_cast<std::uint32_t>(SlotState::committed);
    if (!existed) new (s) SlotHeader{};
    s->index = static_cast<std::uint32_t>(i);
    if (committed) {
      recovered_.push_back(s);
      continue;
    }
    s->state.store(static_cast<std::uint32_t>(SlotState::free), std::memory_order_relaxed);
    std::memcpy(record(s), prototype_, record_size_);
    depot_[depot_size_++] = s;
  }
  // Recovered slots are in use until written: neither in the depot nor
  // in a magazine, census() counts them in use.
  std::reverse(recovered_.begin(), recovered_.end());
}

std::vector<SlotHeader*> RecordPool::take_recovered() {
  return std::exchange(recovered_, {});
}

RecordPool::~RecordPool() {
  if (!file_) munmap(map_, map_bytes_);
}

void RecordPool::attach(SlotCache& cache) noexcept {
  detail::MutexLock lock(mutex_);
  cache.limit = magazine_;
  cache.stride = static_cast<std::uint32_t>(stride_);
  cache.prev = nullptr;
  cache.next = caches_;
  if (caches_ != nullptr) caches_->prev = &cache;
  caches_ = &cache;
}

void RecordPool::detach(SlotCache& cache) noexcept {
  detail::MutexLock lock(mutex_);
  empty_locked(cache);
  (cache.prev ? cache.prev->next : caches_) = cache.next;
  if (cache.next != nullptr) cache.next->prev = cache.prev;
  cache.prev = cache.next = nullptr;
}

void RecordPool::flush(SlotCache& cache) noexcept {
  detail::MutexLock lock(mutex_);
  empty_locked(cache);
}

// The magazine's slots to waiters and the depot. Under the mutex nobody
// reclaims it; its owner is either the caller or not using it.
void RecordPool::empty_locked(SlotCache& cache) noexcept {
  SlotHeader* slots[SlotCache::max_slots];
  const std::uint32_t n = cache.count.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i) slots[i] = cache.slots[i].load(std::memory_order_relaxed);
  cache.count.store(0, std::memory_order_relaxed);
  give_locked(slots, n);
}

SlotHeader* RecordPool::pop_depot_locked() noexcept {
  if (depot_size_ == 0) return nullptr;
  handed_out_.store(handed_out_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return depot_[--depot_size_];
}

// The depot's top slot, after taking back what the magazines hold if it is
// empty; nullptr if acquirers are waiting (queue behind them) or no slot is
// free (then marked exhausted).
SlotHeader* RecordPool::first_free_locked() noexcept {
  if (wait_head_ != nullptr) return nullptr;
  if (depot_size_ == 0 && reclaim_locked(false) == 0) {
    if (!exhausted_.load(std::memory_order_relaxed))
      exhausted_.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  return pop_depot_locked();
}

SlotHeader* RecordPool::refill(SlotCache& cache) noexcept {
  detail::MutexLock lock(mutex_, detail::MutexLock::Spinning{});
  SlotHeader* s = first_free_locked();
  if (s == nullptr) return nullptr;
  // The magazine is empty here: its owner is the caller, and a reclaim
  // that made pop() fail finished before this thread got the mutex.
  // Half of what is left at most, so one thread does not strand the last
  // slots in its magazine while others find the depot empty.
  const auto take = static_cast<std::uint32_t>(std::min<std::size_t>(cache.limit, depot_size_ / 2));
  for (std::uint32_t i = 0; i < take; ++i) {
    cache.slots[i].store(depot_[--depot_size_], std::memory_order_relaxed);
  }
  cache.count.store(take, std::memory_order_relaxed);
  handed_out_.store(handed_out_.load(std::memory_order_relaxed) + take, std::memory_order_relaxed);
  return s;
}

std::size_t RecordPool::reclaim_locked(bool always) noexcept {
  if (caches_ == nullptr) return 0;
  if (!always) {
    // A glance first: the barrier costs every running thread an
    // interrupt. A slot given back in this same instant stays with its
    // owner, who takes it on its next acquire.
    bool any = false;
    for (SlotCache* c = caches_; c != nullptr && !any; c = c->next) {
      any = c->count.load(std::memory_order_relaxed) != 0;
    }
    if (!any) return 0;
  }
  for (SlotCache* c = caches_; c != nullptr; c = c->next) {
    c->reclaim.store(1, std::memory_order_relaxed);
  }
  barrier_all_threads(fence_);
  std::size_t taken = 0;
  for (SlotCache* c = caches_; c != nullptr; c = c->next) {
    // The owner is inside pop() or push(), a few instructions long.
    while (c->busy.load(std::memory_order_acquire) != 0) sched_yield();
    const std::uint32_t n = c->count.load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < n; ++i) {
      depot_[depot_size_++] = c->slots[i].load(std::memory_order_relaxed);
    }
    c->count.store(0, std::memory_order_relaxed);
    c->reclaim.store(0, std::memory_order_release);
    taken += n;
  }
  reclaimed_.fetch_add(taken, std::memory_order_relaxed);
  return taken;
}

void RecordPool::reclaim_all() noexcept {
  detail::MutexLock lock(mutex_);
  reclaim_locked(true);
  serve_waiters_locked();
}

SlotHeader* RecordPool::try_acquire() noexcept {
  SlotHeader* s = nullptr;
  {
    detail::MutexLock lock(mutex_);
    s = first_free_locked();
  }
  if (s != nullptr) prepare(s);
  return s;
}

SlotHeader* RecordPool::acquire_until(std::chrono::steady_clock::time_point deadline,
                                      const std::atomic<bool>& cancel) noexcept {
  detail::MutexLock lock(mutex_);
  Waiter self;
  if (wait_tail_ != nullptr) {
    wait_tail_->next = &self;
  } else {
    wait_head_ = &self;
  }
  wait_tail_ = &self;
  waiters_.fetch_add(1, std::memory_order_relaxed);
  if (depot_size_ == 0) reclaim_locked(false);
  serve_waiters_locked();
  while (self.slot == nullptr && !cancel.load(std::memory_order_acquire)) {
    if (self.cv.wait_until(mutex_, deadline) == std::cv_status::timeout) break;
  }
  if (self.slot == nullptr) {
    // Timed out or cancelled: leave the queue.
    Waiter* prev = nullptr;
    for (Waiter* w = wait_head_; w != nullptr; prev = w, w = w->next) {
      if (w != &self) continue;
      (prev ? prev->next : wait_head_) = self.next;
      if (wait_tail_ == &self) wait_tail_ = prev;
      break;
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  return self.slot;
}

void RecordPool::serve_waiters_locked() noexcept {
  while (wait_head_ != nullptr && depot_size_ != 0) {
    SlotHeader* s = pop_depot_locked();
    prepare(s);
    Waiter* w = wait_head_;
    wait_head_ = w->next;
    if (wait_head_ == nullptr) wait_tail_ = nullptr;
    w->slot = s;
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    w->cv.notify_one();
  }
}

void RecordPool::give_locked(SlotHeader* const* slots, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) depot_[depot_size_++] = slots[i];
  serve_waiters_locked();
}

void RecordPool::to_depot(SlotHeader* s) noexcept {
  detail::MutexLock lock(mutex_, detail::MutexLock::Spinning{});
  give_locked(&s, 1);
}

void RecordPool::release(SlotHeader* const* slots, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) mark_free(slots[i]);
  // In pieces: a producer refilling its magazine meanwhile waits for one
  // piece, not for a whole batch of thousands.
  constexpr std::size_t piece = 256;
  for (std::size_t done = 0; done < count; done += piece) {
    detail::MutexLock lock(mutex_, detail::MutexLock::Spinning{});
    give_locked(slots + done, std::min(piece, count - done));
  }
}

void RecordPool::wake_waiters() noexcept {
  detail::MutexLock lock(mutex_);
  for (Waiter* w = wait_head_; w != nullptr; w = w->next) w->cv.notify_one();
}

RecordPool::Census RecordPool::census() const noexcept {
  detail::MutexLock lock(mutex_);
  Census c;
  c.in_depot = depot_size_;
  for (const SlotCache* m = caches_; m != nullptr; m = m->next) {
    c.cached += m->count.load(std::memory_order_relaxed);
    ++c.magazines;
  }
  const std::size_t free = c.in_depot + c.cached;
  c.in_use = free > capacity_ ? 0 : capacity_ - free;  // counts read while owners pop
  return c;
}

}  // namespace auditpipe::internal
