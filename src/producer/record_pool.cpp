#include "producer/record_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "auditpipe/status.h"
#include "durable/pool_file.h"

namespace auditpipe::internal {

namespace {

constexpr std::size_t cache_line = 64;

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

constexpr std::uint64_t pack(std::uint32_t index, std::uint32_t pops) {
  return (static_cast<std::uint64_t>(pops) << 32) | index;
}
constexpr std::uint32_t index_of(std::uint64_t head) {
  return static_cast<std::uint32_t>(head);
}
constexpr std::uint32_t pops_of(std::uint64_t head) {
  return static_cast<std::uint32_t>(head >> 32);
}

}  // namespace

RecordPool::RecordPool(std::size_t capacity, std::size_t record_size, std::size_t record_align,
                       const std::byte* prototype, const DurableStorage* durable)
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
  links_ = std::make_unique<std::atomic<std::uint32_t>[]>(capacity);
  bool existed = false;
  if (durable != nullptr) {
    file_ = std::make_unique<internal::PoolFile>(durable->path, durable->fingerprint, capacity,
                                                 stride_);
    slab_ = file_->slab();
    existed = file_->existed();
    sources_ = file_->sources();
  } else {
    void* p =
        mmap(nullptr, slab_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw error("auditpipe: cannot allocate the record pool (" + std::to_string(slab_bytes_) +
                  " bytes): " + std::strerror(errno));
    }
    slab_ = static_cast<std::byte*>(p);
  }
  // Touch every page now, so page faults never land on a producer and the
  // resident size is flat from the start. Slots of an earlier run that were
  // committed are kept for recovery; ones half-filled when it died are freed.
  std::uint32_t first_free = none;
  std::uint32_t last_free = none;
  for (std::size_t i = 0; i < capacity; ++i) {
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
    if (last_free == none) {
      first_free = static_cast<std::uint32_t>(i);
    } else {
      links_[last_free].store(static_cast<std::uint32_t>(i), std::memory_order_relaxed);
    }
    last_free = static_cast<std::uint32_t>(i);
  }
  if (last_free != none) links_[last_free].store(none, std::memory_order_relaxed);
  head_.store(pack(first_free, 0), std::memory_order_release);
  // Recovered slots are in use until written: in_use() counts them.
  released_.store(0u - static_cast<std::uint32_t>(recovered_.size()), std::memory_order_relaxed);
}

std::vector<SlotHeader*> RecordPool::take_recovered() {
  return std::exchange(recovered_, {});
}

RecordPool::~RecordPool() {
  if (!file_) munmap(slab_, slab_bytes_);
}

SlotHeader* RecordPool::try_acquire() noexcept {
  std::uint64_t head = head_.load(std::memory_order_seq_cst);
  while (true) {
    const std::uint32_t top = index_of(head);
    if (top == none) {
      if (!exhausted_.load(std::memory_order_relaxed))
        exhausted_.store(true, std::memory_order_relaxed);
      return nullptr;
    }
    SlotHeader* s = slot(top);
    // May read a link that another thread is changing after popping this
    // slot; the CAS then fails because the pop counter moved.
    const std::uint32_t next = links_[top].load(std::memory_order_relaxed);
    // seq_cst: Pipeline::close() relies on it (it sets its flag, then reads
    // the pool; the acquirer pops, then reads the flag).
    if (head_.compare_exchange_weak(head, pack(next, pops_of(head) + 1), std::memory_order_seq_cst,
                                    std::memory_order_acquire)) {
      s->state.store(static_cast<std::uint32_t>(SlotState::filling), std::memory_order_relaxed);
      // The next acquire most likely takes the new top: start moving its
      // lines here, for writing, while this record is filled.
      if (next != none) {
        const std::byte* n = reinterpret_cast<const std::byte*>(slot(next));
        for (std::size_t off = 0; off < stride_; off += 64) __builtin_prefetch(n + off, 1, 3);
      }
      // Reset here, by the acquiring thread, not by the writer at release:
      // a writer that wrote the record's lines would leave them dirty in its
      // own cache for the next producer to fetch (measured: +60 ns/record).
      // Always, even when the caller's mapping writes every column: the
      // copy writes whole lines at once, and skipping it made the producer
      // slower (bench/hot_path: p50 ~95 -> ~120 ns), its field stores then
      // waiting on each line one by one.
      std::memcpy(record(s), prototype_, record_size_);
      return s;
    }
  }
}

SlotHeader* RecordPool::acquire_until(std::chrono::steady_clock::time_point deadline,
                                      const std::atomic<bool>& cancel) noexcept {
  detail::MutexLock lock(wait_mutex_);
  Waiter self;
  if (wait_tail_ != nullptr) {
    wait_tail_->next = &self;
  } else {
    wait_head_ = &self;
  }
  wait_tail_ = &self;
  // seq_cst, like the free-list head's operations and release()'s load of
  // waiters_: either release() sees this waiter and serves it, or this
  // thread sees the slots it pushed and serves them.
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  serve_waiters_locked();
  while (self.slot == nullptr && !cancel.load(std::memory_order_acquire)) {
    if (self.cv.wait_until(wait_mutex_, deadline) == std::cv_status::timeout) break;
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
  while (wait_head_ != nullptr) {
    SlotHeader* s = try_acquire();
    if (s == nullptr) return;
    Waiter* w = wait_head_;
    wait_head_ = w->next;
    if (wait_head_ == nullptr) wait_tail_ = nullptr;
    w->slot = s;
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    w->cv.notify_one();
  }
}

void RecordPool::push_free(SlotHeader* const* slots, std::size_t count) noexcept {
  for (std::size_t i = 0; i + 1 < count; ++i) {
    links_[slots[i]->index].store(slots[i + 1]->index, std::memory_order_relaxed);
  }
  SlotHeader* last = slots[count - 1];
  std::uint64_t head = head_.load(std::memory_order_relaxed);
  do {
    links_[last->index].store(index_of(head), std::memory_order_relaxed);
  } while (!head_.compare_exchange_weak(head, pack(slots[0]->index, pops_of(head)),
                                        std::memory_order_seq_cst, std::memory_order_relaxed));
  released_.fetch_add(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
}

void RecordPool::release(SlotHeader* const* slots, std::size_t count) noexcept {
  if (count == 0) return;
  for (std::size_t i = 0; i < count; ++i) {
    SlotHeader* s = slots[i];
    // Only the thread releasing the slot changes it: no read-modify-write.
    s->generation.store(s->generation.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    s->state.store(static_cast<std::uint32_t>(SlotState::free), std::memory_order_release);
  }
  push_free(slots, count);
  if (waiters_.load(std::memory_order_seq_cst) != 0) {
    detail::MutexLock lock(wait_mutex_);
    serve_waiters_locked();
  }
}

void RecordPool::wake_waiters() noexcept {
  detail::MutexLock lock(wait_mutex_);
  for (Waiter* w = wait_head_; w != nullptr; w = w->next) w->cv.notify_one();
}

std::size_t RecordPool::in_use() const noexcept {
  const auto pops = pops_of(head_.load(std::memory_order_seq_cst));
  const std::uint32_t used = pops - released_.load(std::memory_order_relaxed);
  return used > capacity_ ? capacity_ : used;  // the two counters are read apart
}

}  // namespace auditpipe::internal
