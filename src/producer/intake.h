// Intake: the producer path. It owns the record pool, the queue of
// committed slots, the producer sources and the writers' wake-up signal,
// and is the only code that hands a slot to a producer or takes one back.
//
//   acquire()  a free slot (the prototype's bytes), or the overflow policy:
//              block up to max_wait | drop | fail | a record outside the
//              pool that goes to the spill directory (Overflow::spill);
//   commit()   stamps (source_id, seq), the thread's next or the caller's,
//              marks the slot committed, queues it;
//   abandon()  gives an acquired record back unwritten.
//
// The common case (a free slot, then a commit) takes no lock, executes no
// locked instruction, makes no system call and allocates nothing: one pop
// from the thread's own magazine of slots, one store of the producer's seq,
// one moodycamel enqueue with the producer's token, one relaxed load of the
// writer signal. Those two calls are inline here for that reason; the slow
// paths live in intake.cpp.
//
// Writers take committed slots with take() and give them back with
// release() once the sink stored them; the pipeline uses the rest (start,
// flush, close, stats). Nothing else touches the pool or the queue.
//
// Thread safety: acquire/commit/abandon from any number of threads; the
// writer calls from writer threads; begin_close()/mark_stopped() once, from
// close().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/options.h"
#include "auditpipe/status.h"
#include "observe/counters.h"
#include "producer/producer_registry.h"
#include "producer/record_pool.h"
#include "producer/record_queue.h"
#include "producer/writer_signal.h"

namespace auditpipe::internal {

class Spill;

class Intake {
 public:
  using clock = std::chrono::steady_clock;

  // `spill`: the spill directory for Overflow::spill (nullptr without one).
  // Throws auditpipe::error if the pool cannot be allocated or its durable
  // file cannot be used.
  Intake(const TableDescriptor& table, const Options& options, Counters& counters, Spill* spill);
  ~Intake();
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  // Producers ----------------------------------------------------------------

  std::byte* acquire(Status* status) noexcept {
    Producer* p = nullptr;
    return acquire(status, p);
  }
  // The same, leaving the calling thread's source in `p` for a commit on
  // this thread (commit(record, p)), which then need not look it up.
  std::byte* acquire(Status* status, Producer*& p) noexcept {
    // Behind anyone already waiting: queue up rather than overtake them.
    if (pool_.waiters() != 0) [[unlikely]] {
      p = nullptr;  // the commit looks it up
      return acquire_slow(status);
    }
    p = registry_->current();
    SlotHeader* s = pool_.try_acquire(p->cache);
    if (s == nullptr) [[unlikely]]
      return acquire_slow(status);
    // Checked after taking the slot (pairs with begin_close(), which sets
    // the flag and then makes every thread pass a barrier before it reads
    // the pool): either this sees closing, or close() sees the slot in use
    // and waits for it.
    if (closing_.load(std::memory_order_seq_cst)) [[unlikely]]
      return refuse_taken(s, status);
    return pool_.record(s);
  }

  Status commit(std::byte* record) noexcept { return commit(record, nullptr); }
  // `p`: the calling thread's source, from acquire(status, p) on this
  // thread; nullptr to look it up.
  Status commit(std::byte* record, Producer* p) noexcept { return commit_as(record, p, nullptr); }
  // Stamps the caller's (source_id, seq) instead of the thread's next one;
  // the thread's next_seq does not move (the record is counted in the
  // thread's keyed_committed instead). The enqueue still uses the calling
  // thread's token.
  Status commit(std::byte* record, std::int64_t source_id, std::int64_t seq) noexcept {
    const RecordKey key{source_id, seq};
    return commit_as(record, nullptr, &key);
  }

  void abandon(std::byte* record) noexcept;

  // Writers ------------------------------------------------------------------

  moodycamel::ConsumerToken consumer_token() { return moodycamel::ConsumerToken(queue_); }
  // Up to `max` committed slots: a durable pool's recovered ones before
  // anything new, then the queue's, oldest of each producer first.
  std::size_t take(moodycamel::ConsumerToken& token, SlotHeader** out, std::size_t max) {
    if (recovered_left() != 0) [[unlikely]] {
      const std::size_t n = take_recovered(out, max);
      if (n != 0) return n;
    }
    return queue_.try_dequeue_bulk(token, out, max);
  }
  std::size_t queued() const noexcept { return queue_.size_approx() + recovered_left(); }
  std::byte* record(SlotHeader* slot) const noexcept { return pool_.record(slot); }
  std::size_t slot_stride() const noexcept { return pool_.slot_stride(); }
  // Written (or refused) slots go back to the pool, or to a waiting producer.
  void release(SlotHeader* const* slots, std::size_t count) noexcept {
    pool_.release(slots, count);
  }
  // Producers are waiting for slots (or one found the pool full since the
  // last call): the writer should not hold a partial batch. Reads no line
  // that producers write on every acquire.
  bool producers_short_of_slots() noexcept {
    return pool_.waiters() != 0 || pool_.take_exhausted();
  }
  WriterSignal& signal() noexcept { return signal_; }
  std::uint32_t acquisitions() const noexcept { return pool_.acquisitions(); }

  // The pipeline --------------------------------------------------------------

  // Durable pools: the slots an earlier run left committed, taken by the
  // writers before anything in the queue, after `prepare` has seen each
  // record. Not queued with the rest: the queue does not order one
  // producer's items against another's, so they would interleave with new
  // records (and their seals with new ones). Called once, before the writers
  // start. Returns how many.
  template <class Prepare>
  std::size_t requeue_recovered(Prepare prepare) {
    recovered_ = pool_.take_recovered();
    for (SlotHeader* s : recovered_) prepare(pool_.record(s));
    return recovered_.size();
  }
  PoolFile* pool_file() noexcept { return pool_.file(); }
  bool durable() const noexcept { return pool_.durable(); }

  // (slot index, generation) of every committed slot: a slot is done once
  // its generation moves on (it was freed).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> committed_now() const;
  bool freed_since(const std::pair<std::uint32_t, std::uint32_t>& seen) const noexcept {
    return pool_.slot(seen.first)->generation.load(std::memory_order_acquire) != seen.second;
  }
  // Slots still committed (close(), after the writers are gone).
  std::vector<SlotHeader*> committed_slots() const;
  std::size_t committed_count() const noexcept;
  // Records acquired and not committed: slots being filled, and overflow
  // records in use.
  std::size_t uncommitted() const;
  // For close()'s report, once commit() refuses (mark_stopped()): those, and
  // the ones refused or let go since commit() began to refuse. Each is
  // counted in abandoned, now or when its holder gives it back, and no other
  // record a holder gives back is (a slot taken by an acquire() that then
  // saw the close is counted nowhere, unless this counted it).
  struct CloseCount {
    std::size_t uncommitted;  // as above
    // abandoned once every holder has given its record back: the counter
    // now, and the records seen held that it does not count yet
    std::uint64_t abandoned;
  };
  CloseCount count_at_close() AUDITPIPE_EXCLUDES(close_count_mutex_);

  // acquire() refuses new records from now on; blocked acquirers return
  // Status::closed.
  void begin_close() noexcept;
  bool closing() const noexcept { return closing_.load(std::memory_order_acquire); }
  // The writers are gone: commit() refuses.
  void mark_stopped() noexcept { stopped_.store(true, std::memory_order_seq_cst); }
  bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

  // This process is a fork() child of the one that made this intake: the
  // writers stayed in the parent, and so did the pool and the spill
  // directory (a durable pool's file is mapped shared with the parent, whose
  // records are the parent's to write). From now on acquire() and commit()
  // refuse (Status::closed), abandon() only counts, and nothing touches the
  // pool or the spill. Called by the fork handler, on the child's only
  // thread.
  void orphan() noexcept;
  bool orphaned() const noexcept { return orphaned_.load(std::memory_order_relaxed); }

  std::size_t capacity() const noexcept { return pool_.capacity(); }
  std::size_t in_use() const noexcept { return pool_.in_use(); }
  RecordPool::Census census() const noexcept { return pool_.census(); }
  std::uint64_t reclaimed() const noexcept { return pool_.reclaimed(); }
  std::uint64_t committed() const { return registry_->committed(); }

 private:
  struct RecordKey {
    std::int64_t source_id;
    std::int64_t seq;
  };
  // commit(): under `key` if given, else under the thread's next seq.
  Status commit_as(std::byte* record, Producer* p, const RecordKey* key) noexcept {
    if (!pool_.contains(record)) [[unlikely]]
      return commit_outside_pool(record, key);
    SlotHeader* s = pool_.slot_of(record);
    if (stopped_.load(std::memory_order_acquire)) [[unlikely]] {
      const std::uint32_t index = s->index;
      refuse_after_stop(
          [&] {
            if (!orphaned()) pool_.release(&s, 1);
          },
          index);
      return Status::closed;
    }
    if (p == nullptr) p = registry_->current();
    if (key != nullptr) {
      s->source_id = key->source_id;
      s->seq = key->seq;
      s->state.store(static_cast<std::uint32_t>(SlotState::committed), std::memory_order_release);
      // Counted before it can be written, as next_seq is below. Only this
      // thread writes its counter: no locked instruction.
      const std::uint64_t keyed = p->keyed_committed.load(std::memory_order_relaxed);
      p->keyed_committed.store(keyed + 1, std::memory_order_relaxed);
      if (!queue_.enqueue(p->token, s)) [[unlikely]] {
        p->keyed_committed.store(keyed, std::memory_order_relaxed);
        return drop_unqueued(s);
      }
      signal_.on_commit(pool_);
      return Status::ok;
    }
    const std::int64_t seq = p->next_seq->load(std::memory_order_relaxed);
    s->source_id = p->source_id;
    s->seq = seq;
    // The counter moves first: with a durable pool both live in its file,
    // and a kill between the two must not leave a committed slot whose seq
    // the restart hands out again (the idempotent insert would then drop
    // one of the two records as a duplicate). The release orders them.
    p->next_seq->store(seq + 1, std::memory_order_relaxed);
    s->state.store(static_cast<std::uint32_t>(SlotState::committed), std::memory_order_release);
    if (!queue_.enqueue(p->token, s)) [[unlikely]] {
      // Only when the queue needs a new block and the allocation fails.
      p->next_seq->store(seq, std::memory_order_relaxed);
      return drop_unqueued(s);
    }
    signal_.on_commit(pool_);
    return Status::ok;
  }
  Status drop_unqueued(SlotHeader* s) noexcept {
    pool_.release(&s, 1);
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return Status::dropped;
  }
  std::byte* acquire_slow(Status* status) noexcept;
  // Waits until t0 + max_wait for a slot (Overflow::block, or a refused
  // spill, whose attempt began at t0).
  SlotHeader* acquire_blocking(Status* status, clock::time_point t0) noexcept;
  // Overflow::spill: the calling source's record outside the pool.
  std::byte* overflow_record() noexcept;
  std::size_t take_recovered(SlotHeader** out, std::size_t max) noexcept;
  // Recovered slots no writer has taken yet.
  std::size_t recovered_left() const noexcept {
    const std::size_t next = recovered_next_.load(std::memory_order_relaxed);
    return next < recovered_.size() ? recovered_.size() - next : 0;
  }
  Status commit_outside_pool(std::byte* record, const RecordKey* key) noexcept;
  Producer* owner_of_overflow_record(std::byte* record) const noexcept;

  const TableDescriptor& table_;
  const Options& options_;
  Counters& counters_;
  Spill* const spill_;
  RecordPool pool_;
  RecordQueue queue_;
  // requeue_recovered()'s slots (fixed before the writers start) and the
  // index of the next one to take.
  std::vector<SlotHeader*> recovered_;
  std::atomic<std::size_t> recovered_next_{0};
  std::shared_ptr<ProducerRegistry> registry_;
  WriterSignal signal_;
  const std::size_t overflow_offset_;  // of an overflow record behind its header
  std::atomic<bool> closing_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> orphaned_{false};
  // count_at_close() against records given back meanwhile (slow
  // paths only: a refusal after close() began).
  detail::Mutex close_count_mutex_;
  bool counted_at_close_ AUDITPIPE_GUARDED_BY(close_count_mutex_) = false;
  std::uint64_t refused_before_count_ AUDITPIPE_GUARDED_BY(close_count_mutex_) = 0;
  // The slots it saw being filled (indexes).
  std::vector<std::uint32_t> counted_filling_ AUDITPIPE_GUARDED_BY(close_count_mutex_);

  // A slot taken by an acquire() that then saw close() begin: given back.
  std::byte* refuse_taken(SlotHeader* s, Status* status) noexcept
      AUDITPIPE_EXCLUDES(close_count_mutex_);
  // A record given back after commit() began to refuse (refused, or let go):
  // `give_back` returns its slot or overflow record; counted in abandoned,
  // and for count_at_close() until it has counted.
  template <class GiveBack>
  void refuse_after_stop(GiveBack give_back, std::uint32_t slot_index = UINT32_MAX) noexcept
      AUDITPIPE_EXCLUDES(close_count_mutex_) {
    if (orphaned()) {
      give_back();  // a fork() child: its only thread may not take the lock
    } else {
      detail::MutexLock lock(close_count_mutex_);
      // Counted now: a later acquire() of the same slot is not this record.
      std::erase(counted_filling_, slot_index);
      give_back();
      if (!counted_at_close_) ++refused_before_count_;
    }
    counters_.abandoned.fetch_add(1, std::memory_order_relaxed);
  }
};

}  // namespace auditpipe::internal
