#include "producer/producer_registry.h"

#include <dlfcn.h>
#include <pthread.h>

#include <exception>
#include <random>

namespace auditpipe::internal {

namespace {

std::atomic<std::uint64_t> next_registry_id{1};

// Source ids are base + index; a random base keeps the ids of different
// processes and restarts apart (2^46 bases, 2^16 sources each).
std::int64_t random_source_id_base() {
  std::random_device device;
  const std::uint64_t r = (static_cast<std::uint64_t>(device()) << 32) | device();
  return static_cast<std::int64_t>((r & ((std::uint64_t{1} << 46) - 1)) | 1) << 16;
}

}  // namespace

constinit thread_local ProducerRegistry::FastCache ProducerRegistry::fast_cache{};

// The sources a thread uses, released to their registries when it exits.
//
// Held through a POSIX thread-specific key, not a C++ thread_local: a key's
// destructor runs after every thread_local destructor of the thread. A
// thread_local of the application's made before the thread's first log()
// (a session object) is destroyed after one of ours would be, and its
// destructor may log; the source it then used had already gone back to the
// registry, where another thread took it too, and two threads shared one
// magazine, queue token and seq (a writer crashed, a record acknowledged
// ok was lost, records were stranded until close() gave up on them). A
// log() after even this destructor attaches anew, and the key's
// destructor runs again (POSIX repeats them for keys set meanwhile).
struct ThreadSources {
  struct Binding {
    std::uint64_t registry_id;
    Producer* producer;
    std::weak_ptr<ProducerRegistry> registry;
  };
  std::vector<Binding> bindings;

  ~ThreadSources() {
    // First: nothing later on this thread uses a source given back here.
    ProducerRegistry::fast_cache = {};
    for (auto& b : bindings) {
      if (auto registry = b.registry.lock()) registry->detach(b.producer);
    }
  }

  static void release(void* sources) { delete static_cast<ThreadSources*>(sources); }

  // The key, made as the library loads (below). The library is also kept
  // loaded from then on: a thread's key destructor is this library's code,
  // and a dlclose() while threads that logged still run would leave them
  // calling into unmapped memory as they exit (glibc keeps a library with
  // thread_local destructors pending loaded by itself; a key it does not).
  static pthread_key_t key() {
    static const pthread_key_t made = [] {
      pthread_key_t k{};
      // Out of keys (PTHREAD_KEYS_MAX, 1024, taken by the process): no
      // logger could keep its threads' sources apart.
      if (pthread_key_create(&k, &ThreadSources::release) != 0) std::terminate();
      Dl_info self{};
      if (dladdr(reinterpret_cast<void*>(&ThreadSources::release), &self) != 0 &&
          self.dli_fname != nullptr)
        dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
      return k;
    }();
    return made;
  }

  // The calling thread's, made the first time.
  static ThreadSources& of_this_thread() {
    auto* sources = static_cast<ThreadSources*>(pthread_getspecific(key()));
    if (sources == nullptr) {
      sources = new ThreadSources;
      pthread_setspecific(key(), sources);
    }
    return *sources;
  }
};

namespace {
// Made as the library loads: a child forked while another thread made it
// (its first log()) would wait for ever at its own first log().
[[maybe_unused]] const pthread_key_t thread_sources_key_made_at_load = ThreadSources::key();
}  // namespace

ProducerRegistry::ProducerRegistry(RecordQueue& queue, RecordPool& pool,
                                   std::optional<std::int64_t> source_id_base,
                                   SourceTable* persisted)
    : id_(next_registry_id.fetch_add(1, std::memory_order_relaxed)),
      queue_(queue),
      pool_(pool),
      source_id_base_(persisted        ? persisted->base
                      : source_id_base ? *source_id_base
                                       : random_source_id_base()),
      persisted_(persisted) {
  if (persisted_ == nullptr) return;
  // The sources of earlier runs, ready for the first threads to continue.
  const std::uint64_t n = persisted_->count->load(std::memory_order_acquire);
  for (std::uint64_t i = 0; i < n && i < persisted_->capacity; ++i) {
    PersistedSource& e = persisted_->entries[i];
    producers_.push_back(std::make_unique<Producer>(queue_, pool_, e.source_id, &e.next_seq));
    committed_before_ += static_cast<std::uint64_t>(e.next_seq.load(std::memory_order_relaxed));
  }
  for (auto it = producers_.rbegin(); it != producers_.rend(); ++it) idle_.push_back(it->get());
}

Producer* ProducerRegistry::attach() {
  ThreadSources& thread_sources = ThreadSources::of_this_thread();
  for (auto& b : thread_sources.bindings) {
    if (b.registry_id == id_) {
      fast_cache = {id_, b.producer};
      return b.producer;
    }
  }
  Producer* producer = nullptr;
  {
    detail::MutexLock lock(mutex_);
    if (!idle_.empty()) {
      producer = idle_.back();
      idle_.pop_back();
    } else {
      const std::size_t index = producers_.size();
      std::atomic<std::int64_t>* seq = nullptr;
      std::int64_t id = source_id_base_ + static_cast<std::int64_t>(index);
      if (persisted_ != nullptr && index < persisted_->capacity) {
        PersistedSource& e = persisted_->entries[index];
        e.source_id = id;
        e.next_seq.store(0, std::memory_order_relaxed);
        persisted_->count->store(index + 1, std::memory_order_release);
        seq = &e.next_seq;
      } else if (persisted_ != nullptr) {
        // More threads than the file has room for: a fresh, unpersisted
        // range of ids, so nothing collides with the persisted ones.
        id = random_source_id_base() + static_cast<std::int64_t>(index);
      }
      producers_.push_back(std::make_unique<Producer>(queue_, pool_, id, seq));
      producer = producers_.back().get();
    }
  }
  // Forget bindings of registries that are gone, so a long-lived thread
  // that outlives many loggers does not accumulate them.
  std::erase_if(thread_sources.bindings,
                [](const ThreadSources::Binding& b) { return b.registry.expired(); });
  thread_sources.bindings.push_back({id_, producer, weak_from_this()});
  fast_cache = {id_, producer};
  return producer;
}

void ProducerRegistry::detach(Producer* producer) {
  if (orphaned_.load(std::memory_order_relaxed)) return;
  detail::MutexLock lock(mutex_);
  if (!alive_) return;
  // The exiting thread is the magazine's owner: its slots go back now
  // rather than wait for a reclaim.
  pool_.flush(producer->cache);
  idle_.push_back(producer);
}

std::uint64_t ProducerRegistry::committed() const {
  detail::MutexLock lock(mutex_);
  std::uint64_t total = 0;
  for (const auto& p : producers_) {
    total += static_cast<std::uint64_t>(p->next_seq->load(std::memory_order_relaxed));
    total += p->keyed_committed.load(std::memory_order_relaxed);
  }
  return total - committed_before_;
}

std::size_t ProducerRegistry::overflow_records_in_use() const {
  detail::MutexLock lock(mutex_);
  std::size_t n = 0;
  for (const auto& p : producers_) n += p->spill_record_in_use.load(std::memory_order_relaxed);
  return n;
}

void ProducerRegistry::shutdown() {
  detail::MutexLock lock(mutex_);
  alive_ = false;
  idle_.clear();
  producers_.clear();
}

}  // namespace auditpipe::internal
