// hot_path: what one audit record costs the thread that logs it.
//
// The same 8 fields of a message (ids, sender, receiver, status, latency, a
// ~120-byte payload, and the time) go through, in one binary:
//   auditpipe          logger.log(message): acquire + map + commit, a writer
//                      draining to a null sink
//   auditpipe_durable  the same with the pool in a memory-mapped file
//   floor              a RecordPool acquire from the thread's magazine plus a
//                      moodycamel enqueue of the slot pointer with a producer
//                      token (what auditpipe's path cannot go below), a
//                      consumer releasing them
//   spdlog_async       spdlog's async logger, the fields formatted, to a
//                      null sink
//   naive              new Record with std::string fields into a std::mutex +
//                      std::deque, a consumer deleting them
// at 1, 2, 4 and 100 producer threads. Time per operation and throughput
// are over the whole loop; one operation in 8 is also timed alone with
// the TSC for p50/p99/p99.9 (two TSC reads cost ~23 ns on this machine:
// `timer` measures that overhead, which every sampled latency includes).
// Heap allocations per operation are counted with a replaced operator new.
#include <auditpipe/auditpipe.h>
#include <auditpipe/sink/sink.h>
#include <benchmark/benchmark.h>
#include <concurrentqueue/concurrentqueue.h>
#include <spdlog/async.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "producer/record_pool.h"

namespace {

// The message a platform's worker has in hand.
struct Message {
  std::int64_t id = 0;
  std::int64_t conversation = 0;
  std::string sender = "alice.123@example.org";
  std::string receiver = "bob.456@example.net";
  std::int32_t status = 1;
  std::int64_t latency_us = 420;
  std::string payload = std::string(120, 'p');
};

struct Row {
  auditpipe::timestamp at;
  std::int64_t id = 0;
  std::int64_t conversation = 0;
  auditpipe::fixed_string<48> sender;
  auditpipe::fixed_string<48> receiver;
  std::int32_t status = 0;
  std::int64_t latency_us = 0;
  auditpipe::fixed_string<160> payload;
};
constexpr auto describe(auditpipe::type_tag<Row>) {
  return auditpipe::table<Row>("bench_hot_path", AUDITPIPE_COLUMN(Row, at),
                               AUDITPIPE_COLUMN(Row, id), AUDITPIPE_COLUMN(Row, conversation),
                               AUDITPIPE_COLUMN(Row, sender), AUDITPIPE_COLUMN(Row, receiver),
                               AUDITPIPE_COLUMN(Row, status), AUDITPIPE_COLUMN(Row, latency_us),
                               AUDITPIPE_COLUMN(Row, payload));
}
constexpr auto map_fields(auditpipe::type_tag<Message>, auditpipe::type_tag<Row>) {
  return auditpipe::mapping(auditpipe::stamp_now(&Row::at),
                            auditpipe::field(&Message::id, &Row::id),
                            auditpipe::field(&Message::conversation, &Row::conversation),
                            auditpipe::field(&Message::sender, &Row::sender),
                            auditpipe::field(&Message::receiver, &Row::receiver),
                            auditpipe::field(&Message::status, &Row::status),
                            auditpipe::field(&Message::latency_us, &Row::latency_us),
                            auditpipe::field(&Message::payload, &Row::payload));
}

class NullSink : public auditpipe::Sink {
 public:
  void open(const auditpipe::TableDescriptor&, const auditpipe::SinkContext&) override {}
  auditpipe::WriteResult write(const auditpipe::Batch&) noexcept override { return {}; }
  std::string describe() const override { return "null"; }
};

// TSC ticks per nanosecond, measured once against the steady clock.
double ticks_per_ns() {
  static const double value = [] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t c0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::uint64_t c1 = __rdtsc();
    const auto ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(c1 - c0) / ns;
  }();
  return value;
}

// Per-operation latencies of all threads of one benchmark run.
class Latencies {
 public:
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    samples_.clear();
  }
  void add(const std::vector<std::uint32_t>& ticks) {
    std::lock_guard<std::mutex> lock(mutex_);
    samples_.insert(samples_.end(), ticks.begin(), ticks.end());
  }
  void report(benchmark::State& state) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (samples_.empty()) return;
    std::sort(samples_.begin(), samples_.end());
    auto pct = [&](double q) {
      return static_cast<double>(samples_[std::min(
                 samples_.size() - 1,
                 static_cast<std::size_t>(q * static_cast<double>(samples_.size())))]) /
             ticks_per_ns();
    };
    state.counters["p50_ns"] = pct(0.50);
    state.counters["p99_ns"] = pct(0.99);
    state.counters["p999_ns"] = pct(0.999);
  }

 private:
  std::mutex mutex_;
  std::vector<std::uint32_t> samples_;
};

Latencies latencies;

// The loop every contender runs: time each operation, count allocations.
template <class Op>
void run_timed(benchmark::State& state, Op op) {
  constexpr std::int64_t sample_every = 8;
  std::vector<std::uint32_t> ticks;
  ticks.reserve(static_cast<std::size_t>(state.max_iterations / sample_every + 1));
  Message m;
  std::int64_t i = 0;
  const std::size_t allocs_before = auditpipe::tools::allocations_on_this_thread();
  const std::size_t bytes_before = auditpipe::tools::allocated_bytes_on_this_thread();
  for (auto _ : state) {
    m.id = i;
    if (i++ % sample_every == 0) {
      const std::uint64_t t0 = __rdtsc();
      op(m);
      const std::uint64_t t1 = __rdtsc();
      ticks.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(t1 - t0, UINT32_MAX)));
    } else {
      op(m);
    }
  }
  // The vector of samples was reserved before the loop: nothing else here
  // allocates unless the contender does.
  const auto allocs = auditpipe::tools::allocations_on_this_thread() - allocs_before;
  const auto bytes = auditpipe::tools::allocated_bytes_on_this_thread() - bytes_before;
  state.counters["allocs_per_op"] =
      benchmark::Counter(static_cast<double>(allocs) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
  state.counters["bytes_per_op"] =
      benchmark::Counter(static_cast<double>(bytes) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations());
  latencies.add(ticks);
}

auditpipe::Options pipeline_options() {
  auditpipe::Options o;
  o.capacity = 65536;
  o.batch_size = 1000;
  o.max_wait = std::chrono::seconds(10);
  return o;
}

std::unique_ptr<auditpipe::Logger<Row>> logger;

void BM_auditpipe(benchmark::State& state, bool durable) {
  const std::string file = "/tmp/auditpipe-bench-hot-path.pool";
  if (state.thread_index() == 0) {
    latencies.reset();
    auto o = pipeline_options();
    if (durable) {
      std::filesystem::remove(file);
      o.durable_path = file;
    }
    logger = std::make_unique<auditpipe::Logger<Row>>(std::make_shared<NullSink>(), o);
  }
  run_timed(state, [](const Message& m) { benchmark::DoNotOptimize(logger->log(m)); });
  if (state.thread_index() == 0) {
    const auto report = logger->close();
    // Acquires that found the pool empty and waited for the writer: their
    // waits are part of the tail, and say the writer fell behind.
    state.counters["waits_per_op"] =
        static_cast<double>(report.stats.blocked) / static_cast<double>(report.stats.written);
    logger.reset();
    if (durable) std::filesystem::remove(file);
    latencies.report(state);
  }
}
void BM_auditpipe_memory(benchmark::State& state) {
  BM_auditpipe(state, false);
}
void BM_auditpipe_durable(benchmark::State& state) {
  BM_auditpipe(state, true);
}

// The floor: a pool slot and a queue entry, nothing else.
struct Floor {
  auditpipe::internal::RecordPool pool{65536, sizeof(Row), alignof(Row),
                                       auditpipe::descriptor_of<Row>().prototype};
  moodycamel::ConcurrentQueue<auditpipe::internal::SlotHeader*> queue{65536 + 4096};
  std::atomic<bool> stop{false};
  std::thread consumer{[this] {
    moodycamel::ConsumerToken token(queue);
    std::vector<auditpipe::internal::SlotHeader*> batch(1000);
    while (!stop.load(std::memory_order_relaxed)) {
      const std::size_t n = queue.try_dequeue_bulk(token, batch.data(), batch.size());
      if (n == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      pool.release(batch.data(), n);
    }
  }};
  ~Floor() {
    stop = true;
    consumer.join();
  }
};
std::unique_ptr<Floor> floor_state;

// Made before the threads start and destroyed after they are gone: each
// thread attaches its magazine inside the loop and detaches it after.
void make_floor(const benchmark::State&) {
  floor_state = std::make_unique<Floor>();
}
void drop_floor(const benchmark::State&) {
  floor_state.reset();
}

void BM_floor(benchmark::State& state) {
  if (state.thread_index() == 0) latencies.reset();
  moodycamel::ProducerToken* token = nullptr;
  auditpipe::internal::SlotCache cache;
  run_timed(state, [&](const Message&) {
    if (token == nullptr) {  // once, inside the loop: thread 0 made the floor before it
      token = new moodycamel::ProducerToken(floor_state->queue);
      floor_state->pool.attach(cache);
    }
    auditpipe::internal::SlotHeader* s;
    while ((s = floor_state->pool.try_acquire(cache)) == nullptr) std::this_thread::yield();
    floor_state->queue.enqueue(*token, s);
  });
  floor_state->pool.detach(cache);
  delete token;
  if (state.thread_index() == 0) latencies.report(state);
}

std::shared_ptr<spdlog::async_logger> spdlog_logger;

void BM_spdlog_async(benchmark::State& state) {
  if (state.thread_index() == 0) {
    latencies.reset();
    spdlog::init_thread_pool(65536, 1);
    spdlog_logger = std::make_shared<spdlog::async_logger>(
        "bench", std::make_shared<spdlog::sinks::null_sink_mt>(), spdlog::thread_pool(),
        spdlog::async_overflow_policy::block);
  }
  run_timed(state, [](const Message& m) {
    spdlog_logger->info("{} {} {} {} {} {} {} {}", auditpipe::timestamp::now().micros, m.id,
                        m.conversation, m.sender, m.receiver, m.status, m.latency_us, m.payload);
  });
  if (state.thread_index() == 0) {
    spdlog_logger->flush();
    spdlog_logger.reset();
    spdlog::shutdown();
    latencies.report(state);
  }
}

// A reflection-free but allocation-heavy design: a heap record of strings
// per message, behind one lock.
struct NaiveRecord {
  std::int64_t at, id, conversation;
  std::string sender, receiver;
  std::int32_t status;
  std::int64_t latency_us;
  std::string payload;
};
struct Naive {
  std::mutex mutex;
  std::deque<NaiveRecord*> queue;
  std::atomic<bool> stop{false};
  std::thread consumer{[this] {
    std::vector<NaiveRecord*> taken;
    while (!stop.load(std::memory_order_relaxed)) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        taken.assign(queue.begin(), queue.end());
        queue.clear();
      }
      if (taken.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      for (auto* r : taken) delete r;
      taken.clear();
    }
  }};
  ~Naive() {
    stop = true;
    consumer.join();
    for (auto* r : queue) delete r;
  }
};
std::unique_ptr<Naive> naive_state;

void BM_naive(benchmark::State& state) {
  if (state.thread_index() == 0) {
    latencies.reset();
    naive_state = std::make_unique<Naive>();
  }
  run_timed(state, [](const Message& m) {
    auto* r = new NaiveRecord{auditpipe::timestamp::now().micros,
                              m.id,
                              m.conversation,
                              m.sender,
                              m.receiver,
                              m.status,
                              m.latency_us,
                              m.payload};
    std::lock_guard<std::mutex> lock(naive_state->mutex);
    naive_state->queue.push_back(r);
  });
  if (state.thread_index() == 0) {
    naive_state.reset();
    latencies.report(state);
  }
}

// The measuring itself: an empty operation.
void BM_timer(benchmark::State& state) {
  if (state.thread_index() == 0) latencies.reset();
  run_timed(state, [](const Message& m) { benchmark::DoNotOptimize(m.id); });
  if (state.thread_index() == 0) latencies.report(state);
}

// The same total work at every thread count.
void register_all() {
  constexpr long total = 2'000'000;
  benchmark::RegisterBenchmark("timer", BM_timer)
      ->Iterations(total)
      ->UseRealTime()
      ->Unit(benchmark::kNanosecond);
  for (auto [name, fn] :
       {std::pair{"auditpipe", &BM_auditpipe_memory},
        std::pair{"auditpipe_durable", &BM_auditpipe_durable}, std::pair{"floor", &BM_floor},
        std::pair{"spdlog_async", &BM_spdlog_async}, std::pair{"naive", &BM_naive}}) {
    for (int threads : {1, 2, 4, 100}) {
      auto* b = benchmark::RegisterBenchmark(name, fn)
                    ->Threads(threads)
                    ->Iterations(total / threads)
                    ->UseRealTime()
                    ->Unit(benchmark::kNanosecond);
      if (fn == &BM_floor) b->Setup(make_floor)->Teardown(drop_floor);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ticks_per_ns();
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
