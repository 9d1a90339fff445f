#include "common/tsc_clock.h"

#include <pthread.h>

#include "auditpipe/detail/thread_annotations.h"

#include <cstring>
#include <fstream>
#include <string>

namespace auditpipe {

namespace {

// Invariant TSC (constant rate, running in every C-state), and the kernel's
// own clocksource is the TSC: then cycles convert to wall time reliably.
bool detect_tsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool constant = false, nonstop = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    constant = line.find(" constant_tsc") != std::string::npos;
    nonstop = line.find(" nonstop_tsc") != std::string::npos;
    break;
  }
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string clocksource;
  source >> clocksource;
  return constant && nonstop && clocksource == "tsc";
#else
  return false;
#endif
}

std::uint64_t read_tsc() noexcept {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return 0;
#endif
}

}  // namespace

const bool timestamp::tsc_usable_ = detect_tsc();

timestamp timestamp::resolved() const noexcept {
  return pending() ? internal::TscClock::snapshot().resolve(*this) : *this;
}

namespace internal {

namespace {

struct State {
  detail::Mutex mutex;
  bool calibrated AUDITPIPE_GUARDED_BY(mutex) = false;
  // The first pair: the long baseline starts here.
  std::uint64_t base_tsc AUDITPIPE_GUARDED_BY(mutex) = 0;
  std::int64_t base_ns AUDITPIPE_GUARDED_BY(mutex) = 0;
  TscClock::Snapshot current AUDITPIPE_GUARDED_BY(mutex);
  std::int64_t anchored_ns AUDITPIPE_GUARDED_BY(mutex) = 0;
};

std::int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A (tsc, wall) pair read as close together as the machine allows: the
// tightest of a few tries.
void pair(std::uint64_t* tsc, std::int64_t* ns) {
  std::uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t t0 = read_tsc();
    const std::int64_t wall = realtime_ns();
    const std::uint64_t t1 = read_tsc();
    if (t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      *tsc = t0 + (t1 - t0) / 2;
      *ns = wall;
    }
  }
}

}  // namespace

// The one clock state, its mutex held by the forking thread across fork():
// a writer may hold it at the fork (for 5 ms, calibrating at a logger's
// start), and a pre-forked worker's own logger then waited for it for
// ever in its child (a trial: 1 in 4 workers, in 5 runs of 6). Nothing is
// taken while it is held, so the order among fork handlers does not matter.
static State& clock_state() {
  static State* const state = [] {
    auto* made = new State;  // never destroyed: a fork handler holds it
    pthread_atfork([]() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { clock_state().mutex.lock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { clock_state().mutex.unlock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { clock_state().mutex.unlock(); });
    return made;
  }();
  return *state;
}

// Made as the library loads, before any thread of the program can fork: a
// writer made it at its first batch, and a child forked meanwhile waited
// for ever for that thread's static initialization (a worker's own logger,
// at its first batch; 9 runs of 15 with the cores busy).
[[maybe_unused]] static const State& clock_state_made_at_load = clock_state();

TscClock::Snapshot TscClock::snapshot() {
  if (!timestamp::fast_now_reads_tsc()) return Snapshot{};
  State& state = clock_state();
  detail::MutexLock lock(state.mutex);
  if (!state.calibrated) {
    pair(&state.base_tsc, &state.base_ns);
    // Spin briefly rather than sleep: the baseline must be long enough for
    // a precise rate, and this runs once per process.
    std::uint64_t tsc = 0;
    std::int64_t ns = 0;
    do {
      pair(&tsc, &ns);
    } while (ns - state.base_ns < 5'000'000);
    state.current = {tsc, ns / 1000,
                     static_cast<double>(ns - state.base_ns) / 1000.0 /
                         static_cast<double>(tsc - state.base_tsc)};
    state.anchored_ns = ns;
    state.calibrated = true;
    return state.current;
  }
  const std::int64_t now_ns = realtime_ns();
  if (now_ns - state.anchored_ns >= 1'000'000'000) {
    std::uint64_t tsc = 0;
    std::int64_t ns = 0;
    pair(&tsc, &ns);
    if (tsc > state.base_tsc && ns > state.base_ns) {
      state.current = {tsc, ns / 1000,
                       static_cast<double>(ns - state.base_ns) / 1000.0 /
                           static_cast<double>(tsc - state.base_tsc)};
    }
    state.anchored_ns = ns;
  }
  return state.current;
}

void resolve_timestamps(std::byte* record, std::span<const Column* const> columns,
                        const TscClock::Snapshot& clock) noexcept {
  for (const Column* c : columns) {
    if (is_null(record, *c)) continue;  // a NULL's bytes are nobody's value
    timestamp t;
    std::memcpy(&t.micros, record + c->offset, sizeof t.micros);
    if (!t.pending()) continue;
    t = clock.resolve(t);
    std::memcpy(record + c->offset, &t.micros, sizeof t.micros);
  }
}

}  // namespace internal
}  // namespace auditpipe
