// ProducerRegistry: one source of records per producer thread.
//
// A source is what a thread stamps its records with: a source_id and a
// dense, increasing seq (records committed under a caller's own key are
// only counted here), plus its own moodycamel producer token (a token
// makes an enqueue ~10 ns and keeps each thread's records in order) and its
// own magazine of free pool slots. Giving each thread its own source keeps
// the acquire and commit paths free of shared counters.
//
// A thread finds its source through a one-entry thread-local cache keyed by
// the registry's never-reused id; only its first commit into a registry
// takes the registry's lock. When the thread exits, its source goes back to
// the registry and the next new thread continues it (same source_id, seq
// carrying on), so thread churn does not grow memory. That happens after
// the thread's thread_local destructors, which may still log (a POSIX key's
// destructor; not for the main thread at exit(), whose sources the registry
// owns anyway).
//
// Thread safety: current() from any thread; shutdown() once, when no
// producer is active, before the queue is destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "producer/record_pool.h"
#include "producer/record_queue.h"

namespace auditpipe::internal {

// Cache-line aligned: each producer writes its own seq on every commit,
// and sources of different threads must not share a line.
struct alignas(64) Producer {
  // `persisted`: the durable pool's entry for this source, or nullptr.
  Producer(RecordQueue& queue, RecordPool& slots, std::int64_t id,
           std::atomic<std::int64_t>* persisted)
      : pool(slots), token(queue), source_id(id), next_seq(persisted ? persisted : &own_seq) {
    pool.attach(cache);
  }
  ~Producer() { pool.detach(cache); }
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  // Free slots this thread takes without touching the pool's depot.
  SlotCache cache;
  RecordPool& pool;
  moodycamel::ProducerToken token;
  const std::int64_t source_id;
  // Next seq to stamp. Written only by the thread that owns the source;
  // read by stats(). Lives in the durable pool's file when there is one.
  std::atomic<std::int64_t>* const next_seq;
  std::atomic<std::int64_t> own_seq{0};
  // Records committed under a caller's (source_id, seq) (commit(record,
  // source_id, seq)): they leave next_seq alone, so committed() adds them.
  // Written only by the owning thread; read by stats(). Not persisted: it
  // counts this run's.
  std::atomic<std::uint64_t> keyed_committed{0};
  // Overflow::spill: a record outside the pool for this source (within
  // spill_storage, aligned), allocated the first time the pool is found full.
  std::unique_ptr<std::byte[]> spill_storage;
  std::byte* spill_record = nullptr;
  // Written by the owning thread; read by close() when it counts the
  // records still held.
  std::atomic<bool> spill_record_in_use{false};
};

class ProducerRegistry : public std::enable_shared_from_this<ProducerRegistry> {
 public:
  // Without a base, a random one is drawn. With a durable pool's source
  // table, its sources are continued and new ones recorded in it.
  ProducerRegistry(RecordQueue& queue, RecordPool& pool, std::optional<std::int64_t> source_id_base,
                   SourceTable* persisted = nullptr);

  // The calling thread's source. Allocates only the first time a thread
  // uses this registry.
  Producer* current() {
    if (fast_cache.registry_id == id_) return fast_cache.producer;
    return attach();
  }

  // Records committed through all sources so far (in this run).
  std::uint64_t committed() const;
  // Sources whose overflow record (Overflow::spill) is acquired, not yet
  // committed.
  std::size_t overflow_records_in_use() const;

  // A fork() child's copy (Intake::orphan): threads that exit there give
  // nothing back; the pool and its locks are the parent's.
  void orphan() noexcept { orphaned_.store(true, std::memory_order_relaxed); }

  // Destroys every source (and its queue token). Threads that still cache a
  // source never use it again: they only match this registry's id.
  void shutdown();

 private:
  struct FastCache {
    std::uint64_t registry_id = 0;
    Producer* producer = nullptr;
  };
  static constinit thread_local FastCache fast_cache;
  friend struct ThreadSources;

  Producer* attach();
  void detach(Producer* producer);

  const std::uint64_t id_;
  RecordQueue& queue_;
  RecordPool& pool_;
  std::int64_t source_id_base_;
  SourceTable* persisted_;
  mutable detail::Mutex mutex_;
  bool alive_ AUDITPIPE_GUARDED_BY(mutex_) = true;
  std::vector<std::unique_ptr<Producer>> producers_ AUDITPIPE_GUARDED_BY(mutex_);
  std::vector<Producer*> idle_ AUDITPIPE_GUARDED_BY(mutex_);
  std::uint64_t committed_before_ = 0;  // seqs of persisted sources at start (set once)
  std::atomic<bool> orphaned_{false};
};

}  // namespace auditpipe::internal
