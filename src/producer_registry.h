// ProducerRegistry: one source of records per producer thread.
//
// A source is what a thread stamps its records with: a source_id and a
// dense, increasing seq, plus its own moodycamel producer token (a token
// makes an enqueue ~10 ns and keeps each thread's records in order). Giving
// each thread its own source keeps the commit path free of shared counters.
//
// A thread finds its source through a one-entry thread-local cache keyed by
// the registry's never-reused id; only its first commit into a registry
// takes the registry's lock. When the thread exits, its source goes back to
// the registry and the next new thread continues it (same source_id, seq
// carrying on), so thread churn does not grow memory.
//
// Thread safety: current() from any thread; shutdown() once, when no
// producer is active, before the queue is destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "record_queue.h"

namespace auditpipe::internal {

struct Producer {
  Producer(RecordQueue& queue, std::int64_t id) : token(queue), source_id(id) {}

  moodycamel::ProducerToken token;
  const std::int64_t source_id;
  // Next seq to stamp. Written only by the thread that owns the source;
  // read by stats().
  std::atomic<std::int64_t> next_seq{0};
};

class ProducerRegistry : public std::enable_shared_from_this<ProducerRegistry> {
 public:
  // Without a base, a random one is drawn.
  ProducerRegistry(RecordQueue& queue, std::optional<std::int64_t> source_id_base);

  // The calling thread's source. Allocates only the first time a thread
  // uses this registry.
  Producer* current() {
    if (fast_cache.registry_id == id_) return fast_cache.producer;
    return attach();
  }

  // Records committed through all sources so far.
  std::uint64_t committed() const;

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
  std::int64_t source_id_base_;
  mutable std::mutex mutex_;
  bool alive_ = true;
  std::vector<std::unique_ptr<Producer>> producers_;
  std::vector<Producer*> idle_;
};

}  // namespace auditpipe::internal
