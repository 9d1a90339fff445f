// alloc: getting and giving back one record's memory, five ways, with heap
// allocations and bytes per operation counted (replaced operator new):
//   pool          auditpipe's RecordPool as producers use it: try_acquire
//                 from the thread's magazine + give_back into it
//   pool_depot    the same pool without magazines: every acquire and
//                 release goes to the shared depot (the baseline the
//                 magazines are measured against)
//   new_delete    new Record + delete (whichever malloc is loaded: bench/run.sh
//                 runs it again under LD_PRELOAD of jemalloc and mimalloc)
//   make_shared   std::make_shared<Record> + reset
//   pmr_pool      std::pmr::synchronized_pool_resource allocate + deallocate
// single-threaded and with 2 and 4 threads sharing one pool or resource.
#include <auditpipe/auditpipe.h>
#include <benchmark/benchmark.h>

#include <memory>
#include <memory_resource>

#include "alloc_counter.h"
#include "audit_event.h"
#include "producer/record_pool.h"

namespace {

using bench::AuditEvent;

void count(benchmark::State& state, std::size_t allocs_before, std::size_t bytes_before) {
  const auto n = static_cast<double>(state.iterations());
  state.counters["allocs_per_op"] = benchmark::Counter(
      static_cast<double>(auditpipe::tools::allocations_on_this_thread() - allocs_before) / n,
      benchmark::Counter::kAvgThreads);
  state.counters["bytes_per_op"] = benchmark::Counter(
      static_cast<double>(auditpipe::tools::allocated_bytes_on_this_thread() - bytes_before) / n,
      benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations());
}

std::unique_ptr<auditpipe::internal::RecordPool> pool;

// Before the threads start and after they are gone (a thread attaches its
// magazine before its timed loop, so the pool must exist by then).
void make_pool(const benchmark::State&) {
  const auto& d = auditpipe::descriptor_of<AuditEvent>();
  pool = std::make_unique<auditpipe::internal::RecordPool>(4096, d.record_size, d.record_align,
                                                           d.prototype);
}
void drop_pool(const benchmark::State&) {
  pool.reset();
}

void BM_pool(benchmark::State& state) {
  auditpipe::internal::SlotCache cache;
  pool->attach(cache);
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    auditpipe::internal::SlotHeader* s = pool->try_acquire(cache);
    benchmark::DoNotOptimize(s);
    if (s != nullptr) pool->give_back(cache, s);
  }
  count(state, a, b);
  pool->detach(cache);
}

void BM_pool_depot(benchmark::State& state) {
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    auditpipe::internal::SlotHeader* s = pool->try_acquire();
    benchmark::DoNotOptimize(s);
    if (s != nullptr) pool->release(&s, 1);
  }
  count(state, a, b);
}

void BM_new_delete(benchmark::State& state) {
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    auto* r = new AuditEvent();
    benchmark::DoNotOptimize(r);
    delete r;
  }
  count(state, a, b);
}

void BM_make_shared(benchmark::State& state) {
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    auto r = std::make_shared<AuditEvent>();
    benchmark::DoNotOptimize(r.get());
  }
  count(state, a, b);
}

// One resource for the whole process, never destroyed: libstdc++'s
// synchronized_pool_resource hands each thread a pool through a pthread key,
// and destroying it while a benchmark thread is still exiting (running that
// key's destructor) crashed one run in a few.
std::pmr::synchronized_pool_resource& pmr_resource() {
  static auto* resource = new std::pmr::synchronized_pool_resource();
  return *resource;
}

void BM_pmr_pool(benchmark::State& state) {
  std::pmr::synchronized_pool_resource* resource = &pmr_resource();
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    void* p = resource->allocate(sizeof(AuditEvent), alignof(AuditEvent));
    auto* r = new (p) AuditEvent();
    benchmark::DoNotOptimize(r);
    r->~AuditEvent();
    resource->deallocate(p, sizeof(AuditEvent), alignof(AuditEvent));
  }
  count(state, a, b);
}

}  // namespace

BENCHMARK(BM_pool)->Name("pool")->ThreadRange(1, 4)->UseRealTime()->Setup(make_pool)->Teardown(
    drop_pool);
BENCHMARK(BM_pool_depot)
    ->Name("pool_depot")
    ->ThreadRange(1, 4)
    ->UseRealTime()
    ->Setup(make_pool)
    ->Teardown(drop_pool);
BENCHMARK(BM_new_delete)->Name("new_delete")->ThreadRange(1, 4)->UseRealTime();
BENCHMARK(BM_make_shared)->Name("make_shared")->ThreadRange(1, 4)->UseRealTime();
BENCHMARK(BM_pmr_pool)->Name("pmr_pool")->ThreadRange(1, 4)->UseRealTime();

BENCHMARK_MAIN();
