// Pipeline: wires the rooms together and runs a logger's life: start
// (options, sink, recovery, writers, housekeeper), flush, close, stats.
//
// It owns one of each: the counters (observe), the finisher (writer), the
// spill directory and dead-letter file (durable), the intake (producer),
// the writer control, the writers and the housekeeper. The rooms reach one
// another only through the references handed to them here.
#include "auditpipe/pipeline.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auditpipe/diagnostics.h"
#include "auditpipe/prometheus.h"
#include "auditpipe/sink/sink.h"
#include "common/tsc_clock.h"
#include "durable/dead_letter_file.h"
#include "durable/destination_mark.h"
#include "durable/pool_file.h"
#include "durable/recovered_timestamps.h"
#include "durable/spill.h"
#include "observe/counters.h"
#include "observe/housekeeper.h"
#include "producer/intake.h"
#include "writer/batch_writer.h"
#include "writer/record_finisher.h"
#include "writer/writer_control.h"

namespace auditpipe {

namespace {

// Source ids are base + the thread's index: room for 2^32 threads, and no
// negative id (a seal's ranges write "source:first-last").
constexpr std::int64_t source_room = std::int64_t{1} << 32;

using namespace internal;

// The options with their automatic values (0 = let auditpipe choose) filled
// in, then checked.
Options resolve(const TableDescriptor& table, const Sink* sink, Options o) {
  auto fail = [](const std::string& what) { throw error("auditpipe: invalid options: " + what); };
  if (sink == nullptr) fail("no sink given");
  // milliseconds::max() for "no limit" overflowed the deadlines made of it
  // (max_wait: log() timed out at once; close(): nothing drained).
  for (std::chrono::milliseconds* d :
       {&o.flush_interval, &o.max_wait, &o.close_timeout, &o.retry_backoff_initial,
        &o.retry_backoff_max, &o.spill_fsync_interval, &o.summary_interval, &o.health_down_after})
    *d = std::min<std::chrono::milliseconds>(*d, Pipeline::longest_wait);
  if (o.write_latency_target)
    o.write_latency_target =
        std::min<std::chrono::milliseconds>(*o.write_latency_target, Pipeline::longest_wait);
  if (o.writers == 0) o.writers = std::max(1u, sink->preferred_writers());
  if (o.batch_size == 0) o.batch_size = std::clamp<std::size_t>(o.capacity / 8, 1, 5000);
  if (!o.write_latency_target) {
    o.write_latency_target = std::max(std::chrono::milliseconds(10), o.max_wait / 10);
  }
  if (o.write_latency_target->count() < 0) fail("write_latency_target must not be negative");
  if (table.columns.empty()) fail("the table has no columns");
  if (o.capacity == 0 || o.capacity > RecordPool::max_capacity) {
    fail("capacity must be from 1 to " + std::to_string(RecordPool::max_capacity) + ", not " +
         std::to_string(o.capacity));
  }
  if (o.overflow != Overflow::block && o.overflow != Overflow::drop &&
      o.overflow != Overflow::fail && o.overflow != Overflow::spill) {
    // A value cast from a number, which every switch on it would miss.
    fail("overflow is " + std::to_string(static_cast<int>(o.overflow)) +
         ", not one of block, drop, fail, spill");
  }
  if (o.batch_size > o.capacity) {
    fail("batch_size (" + std::to_string(o.batch_size) + ") must not exceed capacity (" +
         std::to_string(o.capacity) + "): a batch is taken from the pool's records");
  }
  if (o.writers == 0 || o.writers > 256) fail("writers must be 0 (the sink's choice) or 1 to 256");
  if (o.flush_interval.count() <= 0) fail("flush_interval must be positive");
  if (o.max_wait.count() < 0) fail("max_wait must not be negative");
  if (o.close_timeout.count() < 0) fail("close_timeout must not be negative");
  if (o.retry_backoff_initial.count() <= 0 || o.retry_backoff_max < o.retry_backoff_initial) {
    fail("retry backoff must be positive, with the cap not below the first delay");
  }
  if (o.overflow == Overflow::spill && o.spill_path.empty()) {
    fail("overflow = spill needs a spill_path (a directory for the records that do not fit)");
  }
  if (!o.spill_path.empty() && o.spill_max_bytes == 0) {
    fail("spill_max_bytes must be positive (0 would refuse every record spilled)");
  }
  if (!o.spill_path.empty() && o.spill_segment_bytes < 4096) {
    fail(
        "spill_segment_bytes must be at least 4096 (a smaller segment is a new file for "
        "nearly every record spilled)");
  }
  if (o.source_id_base &&
      (*o.source_id_base < 0 ||
       *o.source_id_base > std::numeric_limits<std::int64_t>::max() - source_room)) {
    fail("source_id_base (" + std::to_string(*o.source_id_base) +
         ") must be from 0 to 2^63 - 2^32 - 1 " +
         "(ids are the base plus each producer thread's index)");
  }
  if (o.summary_interval.count() < 0) fail("summary_interval must not be negative");
  if (o.health_down_after.count() <= 0) fail("health_down_after must be positive");
  if (!o.spill_path.empty() && o.spill_fsync_interval.count() <= 0) {
    fail("spill_fsync_interval must be positive");
  }
  return o;
}

bool starts_while_unreachable(const Options& o) {
  return o.start_while_unreachable.value_or(!o.spill_path.empty() || !o.durable_path.empty());
}

// The sinks that serve a pipeline, for as long as each lives. A sink is
// opened once and closed once (Sink's contract): two loggers given one sink
// each opened it, the first close() closed it under the second (whose
// writes then failed as "cancelled"), and the second crashed in cancel().
class SinkClaims {
 public:
  /// Throws auditpipe::error if `sink` serves, or served, another pipeline.
  void claim(const std::shared_ptr<Sink>& sink) {
    if (!try_claim(sink)) {
      std::string where;
      try {
        where = " (" + sink->describe() + ")";
      } catch (...) {
        // Its own error is not the one to report.
      }
      throw error("auditpipe: this sink serves, or served, another logger" + where +
                  "; a sink is opened and closed by one logger, once: give each logger its "
                  "own (auditpipe::open(url) again)");
    }
  }
  /// A pipeline that failed to start never opened it for good.
  void release(const Sink* sink) {
    detail::MutexLock lock(mutex_);
    std::erase_if(claimed_, [&](const std::weak_ptr<Sink>& w) { return w.lock().get() == sink; });
  }
  /// Around fork() (ForkHandlers): not held by a thread the child lacks.
  void lock_for_fork() AUDITPIPE_ACQUIRE(mutex_) { mutex_.lock(); }
  void unlock_after_fork() AUDITPIPE_RELEASE(mutex_) { mutex_.unlock(); }

 private:
  bool try_claim(const std::shared_ptr<Sink>& sink) {
    detail::MutexLock lock(mutex_);
    std::erase_if(claimed_, [](const std::weak_ptr<Sink>& w) { return w.expired(); });
    for (const std::weak_ptr<Sink>& w : claimed_)
      if (w.lock().get() == sink.get()) return false;
    claimed_.push_back(sink);
    return true;
  }

  detail::Mutex mutex_;
  std::vector<std::weak_ptr<Sink>> claimed_ AUDITPIPE_GUARDED_BY(mutex_);
};

SinkClaims& sink_claims() {
  // Never destroyed: an engine kept alive by a held record may let go of
  // its sink after static destruction began.
  static SinkClaims* const claims = new SinkClaims;
  return *claims;
}

// The intakes of this process's engines, for fork(). A child of a process
// with a logger has the logger's memory and none of its threads: its
// writers, connections, spill directory and durable pool file are the
// parent's. A log() there used to return ok for records nobody would write,
// and close() waited for writers that did not exist, for ever. In the child
// every engine is orphaned (Intake::orphan: records refused, the pool not
// touched), closes at once and is never destroyed: its destruction would
// join threads the child does not have, and close the parent's connections
// (MySQL's COM_QUIT and PostgreSQL's Terminate go out on the socket both
// processes hold).
class LiveIntakes {
 public:
  LiveIntakes() {
    pthread_atfork([] { live_intakes().lock_for_fork(); },
                   [] { live_intakes().unlock_in_parent(); },
                   [] { live_intakes().orphan_all_in_child(); });
  }
  void add(Intake* intake) {
    detail::MutexLock lock(mutex_);
    live_.push_back(intake);
  }
  void remove(Intake* intake) {
    detail::MutexLock lock(mutex_);
    std::erase(live_, intake);
  }

  static LiveIntakes& live_intakes() {
    // Never destroyed, as sink_claims().
    static LiveIntakes* const intakes = new LiveIntakes;
    return *intakes;
  }

 private:
  // A fork() holds both registries, so that the child's copies are not
  // held by a thread it does not have (a logger made in the child uses
  // them). Taken in one handler and let go in another: outside the
  // analysis, which sees one function at a time.
  void lock_for_fork() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
    sink_claims().lock_for_fork();
    mutex_.lock();
  }
  void unlock_in_parent() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
    mutex_.unlock();
    sink_claims().unlock_after_fork();
  }
  void orphan_all_in_child() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
    for (Intake* intake : live_) intake->orphan();
    mutex_.unlock();
    sink_claims().unlock_after_fork();
  }

  detail::Mutex mutex_;
  std::vector<Intake*> live_ AUDITPIPE_GUARDED_BY(mutex_);
};

// Both registries are made as the library loads: a child forked while
// another thread made one (its first logger) would wait for ever for that
// thread's static initialization at its own first logger.
[[maybe_unused]] const SinkClaims& sink_claims_made_at_load = sink_claims();
[[maybe_unused]] const LiveIntakes& live_intakes_made_at_load = LiveIntakes::live_intakes();

// How often a durable pool's file gets the current TSC calibration: the
// calibration itself is re-anchored at most once a second.
constexpr std::chrono::seconds clock_save_interval{1};

}  // namespace

class Pipeline::Engine {
 public:
  Engine(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options,
         std::shared_ptr<const void> keep_alive)
      : keep_alive_(std::move(keep_alive)),
        table_(table),
        options_(options),
        sink_(std::move(sink)),
        finisher_(table_, sink_->accepts_nul_in_text(), counters_),
        spill_(options_.spill_path.empty()
                   ? nullptr
                   : std::make_unique<Spill>(options_, table_, counters_, finisher_)),
        dead_letters_(options_.dead_letter_path.empty()
                          ? nullptr
                          : std::make_unique<DeadLetterFile>(options_.dead_letter_path)),
        intake_(table_, options_, counters_, spill_.get()) {
    // Open before accepting anything: a bad URL, a missing table or wrong
    // credentials fail here, not at the first batch.
    // Claimed for good once opened; a start that failed before leaves it
    // free for a retry.
    sink_claims().claim(sink_);
    try {
      const std::vector<RecordRef> recovered = recovered_keys();
      SinkContext context{options_.writers, !options_.durable_path.empty(), recovered};
      // A fixed base numbers its sources from seq 0 at every start but one
      // that goes on with an existing pool file's numbering.
      const PoolFile* file = intake_.pool_file();
      if (options_.source_id_base && (file == nullptr || !file->existed())) {
        context.fixed_sources_first = *options_.source_id_base;
        context.fixed_sources_count = source_room;
      }
      context.starts_while_unreachable = starts_while_unreachable(options_);
      sink_->open(table_, context);
    } catch (const unreachable& e) {
      if (!starts_while_unreachable(options_)) {
        sink_claims().release(sink_.get());
        throw;
      }
      counters_.start_unreachable(e.what());
      diagnostics()->error(
          "auditpipe: starting without the database ({}); records wait{} until it answers",
          e.what(),
          !options_.spill_path.empty()     ? " in the pool and the spill directory"
          : !options_.durable_path.empty() ? " in the durable pool"
                                           : " in the pool");
    } catch (...) {
      sink_claims().release(sink_.get());
      throw;
    }
    recover();
    if (spill_) {
      check_destination_mark(options_.spill_path / "destination", sink_->describe(),
                             spill_->records(), "spill directory " + options_.spill_path.string());
    }
    schedule_chores();
    const WriterParts parts{table_,   options_,  *sink_,    intake_,
                            control_, finisher_, counters_, dead_letters_.get()};
    writers_.reserve(options_.writers);
    try {
      for (unsigned i = 0; i < options_.writers; ++i) {
        writers_.push_back(
            std::make_unique<BatchWriter>(parts, i, i == 0 ? spill_.get() : nullptr));
      }
      housekeeper_.start();
    } catch (...) {
      // A thread could not be started (a limit on threads or memory): the
      // ones that were are stopped, not joined for ever while they wait
      // for work. Nothing was accepted; recovered records stay where they
      // were (the durable pool's file, the spill directory).
      control_.give_up();
      sink_->cancel();  // a writer inside the sink (a lease, a connect) comes out now
      control_.stop();
      intake_.signal().wake_all();
      for (auto& w : writers_) w->join();
      housekeeper_.stop();
      sink_->close();
      throw;
    }
    LiveIntakes::live_intakes().add(&intake_);
  }

  ~Engine() { LiveIntakes::live_intakes().remove(&intake_); }

  // The Pipeline is being destroyed: closes, then frees the engine unless
  // records it handed out are still held; then the last of them does.
  static void retire(Engine* e) {
    // In a fork() child: never freed (LiveIntakes).
    if (e->intake_.orphaned()) return;
    e->close(clock::now() + e->options_.close_timeout);
    std::size_t held = 0;
    {
      detail::MutexLock lock(e->held_mutex_);
      held = e->intake_.uncommitted();
      e->parked_.store(held != 0, std::memory_order_release);
    }
    if (held == 0) {
      delete e;
      return;
    }
    diagnostics()->warn(
        "auditpipe: a logger was destroyed while {} of its records were acquired and not "
        "committed; its memory is kept until they are let go",
        held);
  }

  // A held record comes back (committed or let go). Once the engine is
  // parked, each return holds a ticket while it touches the engine, and the
  // last one out frees it.
  template <class GiveBack>
  static auto give_back(Engine* e, GiveBack f) {
    if (!e->parked_.load(std::memory_order_acquire)) [[likely]]
      return f(e->intake_);
    {
      detail::MutexLock lock(e->held_mutex_);
      ++e->returning_;
    }
    struct Ticket {
      Engine* e;
      ~Ticket() {
        bool last = false;
        {
          detail::MutexLock lock(e->held_mutex_);
          last = --e->returning_ == 0 && e->intake_.uncommitted() == 0;
        }
        if (last && !e->intake_.orphaned()) delete e;
      }
    } ticket{e};
    return f(e->intake_);
  }

  Intake& intake() noexcept { return intake_; }

  // Every record committed before the call is stored: those in the pool,
  // and those in the spill directory (all of them: replay goes oldest
  // first, and a record spilled later waits behind the earlier ones).
  bool flush(clock::time_point deadline) {
    if (intake_.orphaned()) return false;
    auto pending = intake_.committed_now();
    WriterControl::UrgentScope urgent(control_);
    intake_.signal().wake_all();
    while (true) {
      std::erase_if(pending, [&](const auto& p) { return intake_.freed_since(p); });
      if (pending.empty() && on_disk() == 0) return true;
      const auto now = clock::now();
      if (now >= deadline || intake_.stopped()) return false;
      control_.wait_progress(std::min(deadline, now + std::chrono::milliseconds(10)));
    }
  }

  CloseReport close(clock::time_point deadline) {
    if (intake_.orphaned()) {
      // Nothing was committed in this process; the parent writes its own.
      CloseReport report;
      report.drained = true;
      report.stats = stats();
      return report;
    }
    detail::MutexLock lock(close_mutex_);
    if (report_) return *report_;
    intake_.begin_close();
    const bool drained = drain(deadline);
    if (!drained) {
      control_.give_up();
      // Writers inside the sink (a lease wait, a connect, a statement to a
      // server that does not answer) come out now, not at the sink's own
      // timeouts.
      sink_->cancel();
    }
    control_.stop();
    intake_.signal().wake_all();
    for (auto& w : writers_) w->join();
    intake_.mark_stopped();
    housekeeper_.stop();
    // The pool's last figures, before closing the sink takes the pool away.
    const auto pool_at_close = sink_->connection_pool_stats();
    sink_->close();

    const auto [spilled, unwritten] = keep_leftovers();
    CloseReport report;
    const Intake::CloseCount count = intake_.count_at_close();
    report.uncommitted = count.uncommitted;
    if (report.uncommitted != 0) {
      diagnostics()->warn(
          "auditpipe: closed with {} records acquired and never committed; counted as abandoned",
          report.uncommitted);
    }
    report.stats = stats();
    // The uncommitted ones among the abandoned, as they will be counted (a
    // scan of its own could see a slot an acquire() takes and gives back
    // uncounted as the close ends).
    report.stats.abandoned = count.abandoned;
    report.stats.connection_pool = pool_at_close;
    abandoned_at_close_.store(report.stats.abandoned, std::memory_order_release);
    report.spilled = spilled;
    // With those lost in a spill directory removed under the logger.
    report.unwritten = counters_.unwritten.load(std::memory_order_relaxed);
    report.on_disk = on_disk();
    report.drained = report.unwritten == 0 && report.on_disk == 0 && drained;
    report_ = report;
    return report;
  }

  Stats stats() const {
    Stats s;
    if (intake_.orphaned()) {
      // The counters' copies are the parent's, as of the fork.
      s.health = Health::down;
      s.health_reason =
          "auditpipe: this process is a fork() child of the one that made this "
          "logger (pid " +
          std::to_string(owner_pid_) +
          "), whose writers and connections it does not have: the logger refuses "
          "records here (Status::closed); make loggers after fork()";
      return s;
    }
    const bool spill_pending = on_disk() != 0;
    counters_.copy_to(s, spill_pending, options_.health_down_after, [&] {
      // Committed records not stored yet (queued, or held by a writer), or
      // spilled ones.
      // (A queued record is committed: the queue's size spares the scan
      // of every slot, one cache miss each, in the common case.)
      return spill_pending || intake_.queued() != 0 || intake_.committed_count() != 0;
    });
    s.committed = intake_.committed();
    // After close(), records still acquired count as abandoned, as the close
    // report counts them: the same total before and after the application
    // lets go of them (each release moves one into the counter; nothing new
    // is acquired). Once the report is made, its total: a scan racing a
    // release could read one too few or too many, and a counter must not go
    // down.
    if (const std::uint64_t total = abandoned_at_close_.load(std::memory_order_acquire))
      s.abandoned = std::max(s.abandoned, total);
    else if (intake_.stopped())
      s.abandoned += intake_.uncommitted();
    s.connection_pool = sink_->connection_pool_stats();
    // The reason is the last failed write's, and a write fails only when a
    // lease gives up (connection_timeout, 30 s by default): meanwhile the
    // pool's connects may fail for another reason (the connections were
    // cut, and now the password is refused). With no connection open, the
    // latest connect error is said too.
    if (const auto& pool = s.connection_pool;
        s.health != Health::ok && pool && pool->active + pool->idle == 0 &&
        !pool->last_connect_error.empty() &&
        s.health_reason.find(pool->last_connect_error) == std::string::npos) {
      s.health_reason += (s.health_reason.empty() ? "" : "; ") +
                         std::string("the latest connect failed: ") + pool->last_connect_error;
    }
    // A close that ran out of time before any write had failed (a server
    // that hangs) left these: the last word on the logger is not ok. (A
    // spill directory removed while the logger runs counts its records
    // unwritten too, and says so itself: a running logger was said to be
    // "closed with" them.)
    if (s.unwritten != 0 && intake_.stopped()) {
      s.health = Health::down;
      s.health_reason =
          "auditpipe: closed with " + std::to_string(s.unwritten) + " committed records unwritten" +
          (intake_.durable() ? " (kept in the durable pool for the next start)" : "") +
          (s.health_reason.empty() ? "" : "; " + s.health_reason);
    }
    s.seals = sink_->seal_stats();
    s.spill_bytes = spill_ ? spill_->bytes() : 0;
    s.spill_records = on_disk();
    s.pool_capacity = intake_.capacity();
    s.max_wait_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(options_.max_wait).count());
    const auto census = intake_.census();
    s.pool_in_use = census.in_use;
    s.pool_cached = census.cached;
    return s;
  }

  const TableDescriptor& table() const noexcept { return table_; }
  const Options& options() const noexcept { return options_; }

 private:
  // What a durable pool holds committed from an earlier run, before the
  // writers start (nothing else touches the pool yet), sorted by key.
  std::vector<RecordRef> recovered_keys() const {
    std::vector<RecordRef> keys;
    if (!intake_.durable()) return keys;
    for (const SlotHeader* s : intake_.committed_slots())
      keys.push_back(RecordRef{s->source_id, s->seq, nullptr});
    std::sort(keys.begin(), keys.end(), [](const RecordRef& a, const RecordRef& b) {
      return a.source_id != b.source_id ? a.source_id < b.source_id : a.seq < b.seq;
    });
    return keys;
  }

  // Records a killed process had committed into the durable pool are
  // queued before anything new, so they are written first.
  void recover() {
    PoolFile* file = intake_.pool_file();
    if (file == nullptr) return;
    std::optional<RecoveredTimestamps> timestamps;
    if (finisher_.has_timestamps()) timestamps.emplace(*file, options_.durable_path, table_);
    const std::size_t n = intake_.requeue_recovered([&](std::byte* record) {
      if (timestamps) timestamps->resolve(record);
    });
    check_destination_mark(options_.durable_path.string() + ".destination", sink_->describe(), n,
                           "durable pool " + options_.durable_path.string());
    if (n != 0) {
      counters_.recovered.store(n, std::memory_order_relaxed);
      diagnostics()->info("auditpipe: {} committed records recovered from {}; writing them first",
                          n, options_.durable_path.string());
    }
  }

  void schedule_chores() {
    if (spill_) {
      // Twice per interval: appended data is never unsynced for much longer
      // than spill_fsync_interval.
      housekeeper_.every(std::max<Housekeeper::clock::duration>(spill_->fsync_interval() / 2,
                                                                std::chrono::milliseconds(1)),
                         [this] { spill_->sync_if_due(); });
    }
    PoolFile* file = intake_.pool_file();
    if (file != nullptr && finisher_.has_timestamps() && timestamp::fast_now_reads_tsc()) {
      // From here on the file holds this boot's calibration: records
      // committed from now on can be read after a reboot.
      file->save_clock(TscClock::snapshot());
      housekeeper_.every(clock_save_interval, [file] { file->save_clock(TscClock::snapshot()); });
    }
    if (spill_ || file != nullptr) {
      // Removed under the logger (a clean-up job, an operator), a spill
      // directory took every record spilled since into the void, without a
      // word, and a durable pool's file no longer kept records past a kill.
      housekeeper_.every(std::chrono::seconds(1), [this, file] {
        if (spill_ && !spill_gone_ && !spill_->still_in_place()) {
          spill_gone_ = true;
          const std::uint64_t lost = spill_->take_lost();
          // Counted unwritten: committed, and now beyond any write.
          counters_.unwritten.fetch_add(lost, std::memory_order_relaxed);
          const std::string why = spill_->last_error() + "; " + std::to_string(lost) +
                                  " records it held are lost (counted unwritten); records wait "
                                  "for pool slots instead";
          diagnostics()->error("auditpipe: {}", why);
          counters_.storage_lost(why);
        }
        if (file != nullptr && !pool_file_gone_ && !file->still_in_place()) {
          pool_file_gone_ = true;
          const std::string why = "the durable pool's file " + file->path().string() +
                                  " was removed or moved while the logger ran: committed records "
                                  "no longer outlive the process";
          diagnostics()->error("auditpipe: {}", why);
          counters_.storage_lost(why);
        }
      });
    }
    if (options_.summary_interval.count() > 0) {
      housekeeper_.every(options_.summary_interval,
                         [this] { diagnostics()->info("{}", summary_line(stats())); });
    }
  }

  std::uint64_t on_disk() const { return spill_ ? spill_->records() : 0; }

  // Writers hand over partial batches until everything committed is
  // written and the spill directory replayed, or `deadline`; true if it
  // was. Records being filled may still be committed: they are waited for
  // up to uncommitted_grace (in_use() counts them with the committed ones),
  // then no longer.
  bool drain(clock::time_point deadline) {
    WriterControl::UrgentScope urgent(control_);
    intake_.signal().wake_all();
    const clock::time_point grace_end = clock::now() + uncommitted_grace;
    while (intake_.in_use() != 0 || on_disk() != 0) {
      const auto now = clock::now();
      // Only records being filled left? Scanning every slot costs a cache
      // miss each (~6 ms for 65,536 slots here, every 10 ms, on the cores
      // the writers need), so only once nothing is queued.
      if (now >= grace_end && intake_.queued() == 0 && intake_.committed_count() == 0 &&
          on_disk() == 0) {
        break;
      }
      if (now >= deadline) return false;
      control_.wait_progress(std::min(deadline, now + std::chrono::milliseconds(10)));
    }
    return true;
  }

  // After the writers are gone: whatever is still committed goes to the
  // spill directory if there is one; what cannot go anywhere is counted,
  // loudly (a durable pool keeps it for the next start).
  std::pair<std::uint64_t, std::uint64_t> keep_leftovers() {
    const std::vector<SlotHeader*> left = intake_.committed_slots();
    std::uint64_t spilled = 0;
    if (spill_ && !left.empty()) {
      std::vector<RecordRef> refs;
      refs.reserve(left.size());
      const TscClock::Snapshot clock = finisher_.clock();
      for (SlotHeader* s : left) {
        std::byte* record = intake_.record(s);
        finisher_.finish(record, clock);
        refs.push_back({s->source_id, s->seq, record});
      }
      spilled = spill_->keep(refs, options_.batch_size);
      intake_.release(left.data(), spilled);
    }
    if (spill_) spill_->seal();
    const std::uint64_t unwritten = left.size() - spilled;
    counters_.unwritten.fetch_add(unwritten, std::memory_order_relaxed);
    if (spilled != 0) {
      diagnostics()->warn(
          "auditpipe: closed with {} records spilled to {}; they are written at the next start",
          spilled, options_.spill_path.string());
    }
    if (unwritten != 0) {
      diagnostics()->error(
          "auditpipe: closed with {} committed records unwritten to {}{}", unwritten,
          sink_->describe(),
          intake_.durable() ? " (kept in the durable pool for the next start)" : "");
    }
    return {spilled, unwritten};
  }

  // What owns a descriptor that is not static (a runtime Schema): first,
  // so it goes last, after everything that reads table_.
  const std::shared_ptr<const void> keep_alive_;
  const pid_t owner_pid_ = ::getpid();
  const TableDescriptor& table_;
  const Options options_;
  const std::shared_ptr<Sink> sink_;
  Counters counters_;
  const RecordFinisher finisher_;
  const std::unique_ptr<Spill> spill_;
  const std::unique_ptr<DeadLetterFile> dead_letters_;
  Intake intake_;
  WriterControl control_;
  Housekeeper housekeeper_;
  // Told once (the housekeeper's thread only).
  bool spill_gone_ = false;
  bool pool_file_gone_ = false;
  std::vector<std::unique_ptr<BatchWriter>> writers_;
  detail::Mutex close_mutex_;
  std::optional<CloseReport> report_ AUDITPIPE_GUARDED_BY(close_mutex_);
  std::atomic<std::uint64_t> abandoned_at_close_{0};  ///< the report's, once made
  // Parked: the Pipeline is gone, records are still held (see retire()).
  std::atomic<bool> parked_{false};
  detail::Mutex held_mutex_;
  std::size_t returning_ AUDITPIPE_GUARDED_BY(held_mutex_) = 0;
};
Pipeline::Pipeline(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options)
    : Pipeline(table, std::move(sink), options, nullptr) {}

Pipeline::Pipeline(const TableDescriptor& table, std::shared_ptr<Sink> sink, const Options& options,
                   std::shared_ptr<const void> keep_alive) {
  const Options resolved = resolve(table, sink.get(), options);
  engine_ = new Engine(table, std::move(sink), resolved, std::move(keep_alive));
}

Pipeline::~Pipeline() {
  Engine::retire(engine_);
}

std::byte* Pipeline::acquire(Status* status) noexcept {
  return engine_->intake().acquire(status);
}
Status Pipeline::commit(std::byte* record) noexcept {
  return engine_->intake().commit(record);
}
Status Pipeline::commit(std::byte* record, std::int64_t source_id, std::int64_t seq) noexcept {
  return engine_->intake().commit(record, source_id, seq);
}
void Pipeline::abandon(std::byte* record) noexcept {
  engine_->intake().abandon(record);
}
Pipeline::Claim Pipeline::claim(Status* status) noexcept {
  Claim c{nullptr, nullptr};
  c.record = engine_->intake().acquire(status, c.source);
  return c;
}
Status Pipeline::commit(const Claim& claim) noexcept {
  return engine_->intake().commit(claim.record, claim.source);
}
Status Pipeline::commit(Engine* engine, std::byte* record) noexcept {
  return Engine::give_back(engine, [record](Intake& intake) { return intake.commit(record); });
}
Status Pipeline::commit(Engine* engine, std::byte* record, std::int64_t source_id,
                        std::int64_t seq) noexcept {
  return Engine::give_back(engine,
                           [=](Intake& intake) { return intake.commit(record, source_id, seq); });
}
void Pipeline::abandon(Engine* engine, std::byte* record) noexcept {
  Engine::give_back(engine, [record](Intake& intake) { intake.abandon(record); });
}
bool Pipeline::flush(clock::time_point deadline) {
  return engine_->flush(deadline);
}
CloseReport Pipeline::close(clock::time_point deadline) {
  return engine_->close(deadline);
}
Stats Pipeline::stats() const {
  return engine_->stats();
}
const TableDescriptor& Pipeline::table() const noexcept {
  return engine_->table();
}
const Options& Pipeline::options() const noexcept {
  return engine_->options();
}

}  // namespace auditpipe
