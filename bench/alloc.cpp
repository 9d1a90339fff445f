// alloc: getting and giving back one record's memory, four ways, with heap
// allocations and bytes per operation counted (replaced operator new):
//   pool          auditpipe's RecordPool: try_acquire + release
//   new_delete    new Record + delete
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

void BM_pool(benchmark::State& state) {
  if (state.thread_index() == 0) {
    const auto& d = auditpipe::descriptor_of<AuditEvent>();
    pool = std::make_unique<auditpipe::internal::RecordPool>(4096, d.record_size, d.record_align,
                                                             d.prototype);
  }
  const auto a = auditpipe::tools::allocations_on_this_thread();
  const auto b = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    auditpipe::internal::SlotHeader* s = pool->try_acquire();
    benchmark::DoNotOptimize(s);
    if (s != nullptr) pool->release(&s, 1);
  }
  count(state, a, b);
  if (state.thread_index() == 0) pool.reset();
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

BENCHMARK(BM_pool)->Name("pool")->ThreadRange(1, 4)->UseRealTime();
BENCHMARK(BM_new_delete)->Name("new_delete")->ThreadRange(1, 4)->UseRealTime();
BENCHMARK(BM_make_shared)->Name("make_shared")->ThreadRange(1, 4)->UseRealTime();
BENCHMARK(BM_pmr_pool)->Name("pmr_pool")->ThreadRange(1, 4)->UseRealTime();

BENCHMARK_MAIN();
