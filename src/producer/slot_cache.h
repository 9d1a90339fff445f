// SlotCache: one producer thread's magazine of free record slots.
//
// The owner takes slots from here and gives them back without a locked
// instruction and without writing a line that another thread writes: the
// magazine is its own. The pool's depot fills and empties it a magazine at
// a time, under the depot's mutex (RecordPool owns that side).
//
// Slots parked here still count against the pool's capacity, so a thread
// that needs a slot while others hold cached ones must be able to take
// them: a reclaimer (a blocked acquirer, an acquirer that found the depot
// empty, close()) holds the depot's mutex, raises `reclaim`, makes every
// thread of the process pass a full memory barrier (Linux membarrier; where
// the kernel lacks it, the owner's path runs a fence instead), waits for
// `busy` to drop and empties the magazine. An owner that finds `reclaim`
// raised leaves its magazine alone and goes to the depot, whose mutex the
// reclaimer holds until it is done. The barrier is what lets the owner's
// side be plain stores: either the owner sees `reclaim`, or the reclaimer
// sees `busy` (and then everything the owner did before dropping it).
//
// Thread safety: pop() and push() only from the owning thread; everything
// else only under the depot's mutex.
#pragma once

#include <atomic>
#include <cstdint>

namespace auditpipe::internal {

struct SlotHeader;

struct alignas(64) SlotCache {
  static constexpr std::uint32_t max_slots = 32;

  // Takes a slot, or nullptr if the magazine is empty or being reclaimed.
  // `fence`: the kernel offers no membarrier, so order here instead.
  SlotHeader* pop(bool fence) noexcept {
    busy.store(1, std::memory_order_relaxed);
    order(fence);
    SlotHeader* s = nullptr;
    if (reclaim.load(std::memory_order_relaxed) == 0) {
      const std::uint32_t n = count.load(std::memory_order_relaxed);
      if (n != 0) {
        s = slots[n - 1].load(std::memory_order_relaxed);
        count.store(n - 1, std::memory_order_relaxed);
        // The next acquire most likely takes this one: start moving its
        // lines here, for writing, while the current record is filled.
        if (n >= 2) prefetch(slots[n - 2].load(std::memory_order_relaxed));
      }
    }
    busy.store(0, std::memory_order_release);
    return s;
  }

  // Parks a free slot; false if the magazine is full or being reclaimed.
  bool push(SlotHeader* s, bool fence) noexcept {
    busy.store(1, std::memory_order_relaxed);
    order(fence);
    bool done = false;
    if (reclaim.load(std::memory_order_relaxed) == 0) {
      const std::uint32_t n = count.load(std::memory_order_relaxed);
      if (n < limit) {
        slots[n].store(s, std::memory_order_relaxed);
        count.store(n + 1, std::memory_order_relaxed);
        done = true;
      }
    }
    busy.store(0, std::memory_order_release);
    return done;
  }

  // Set by the pool when the cache is attached: how many slots it may park
  // (0: none, every acquire goes to the depot).
  std::uint32_t limit = 0;
  std::uint32_t stride = 0;  // the pool's slot stride, for prefetching
  std::atomic<std::uint32_t> busy{0};
  std::atomic<std::uint32_t> reclaim{0};
  std::atomic<std::uint32_t> count{0};
  // The depot's list of attached caches (under its mutex).
  SlotCache* prev = nullptr;
  SlotCache* next = nullptr;
  std::atomic<SlotHeader*> slots[max_slots] = {};

 private:
  static void order(bool fence) noexcept {
    if (fence) [[unlikely]] {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    } else {
      // The compiler must not move the load of `reclaim` above the store
      // of `busy`; the processor is kept in order by the reclaimer's
      // membarrier.
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  }
  void prefetch(const SlotHeader* s) const noexcept {
    const auto* p = reinterpret_cast<const char*>(s);
    for (std::uint32_t off = 0; off < stride; off += 64) prefetch_for_write(p + off);
  }
  // The lines were last read (or written) by a writer on another core. A
  // plain prefetch would bring them in shared, and each store of the fill
  // would still wait for the other copies to be invalidated; PREFETCHW asks
  // for them exclusive. x86-64 compilers emit it for __builtin_prefetch only
  // when told the target has it, which every x86-64 processor of the last
  // decade does (and older ones execute the encoding as a no-op).
  static void prefetch_for_write(const char* p) noexcept {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
  }
};

}  // namespace auditpipe::internal
