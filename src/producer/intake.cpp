#include "producer/intake.h"

#include <algorithm>
#include <cstring>

#include "common/descriptor_fingerprint.h"
#include "durable/pool_file.h"
#include "durable/spill.h"

namespace auditpipe::internal {

namespace {

// An overflow record (Overflow::spill) lives in its source's own buffer,
// behind this header, aligned like a pool record.
struct OverflowHeader {
  Producer* producer;
};
constexpr std::size_t overflow_alignment(std::size_t record_align) {
  return std::max<std::size_t>(record_align, 64);
}
constexpr std::size_t overflow_offset(std::size_t record_align) {
  const std::size_t a = overflow_alignment(record_align);
  return (sizeof(OverflowHeader) + a - 1) / a * a;
}

RecordPool make_pool(const TableDescriptor& table, const Options& options) {
  const DurableStorage durable{options.durable_path, fingerprint(table), options.source_id_base};
  return RecordPool(options.capacity, table.record_size, table.record_align, table.prototype,
                    options.durable_path.empty() ? nullptr : &durable);
}

}  // namespace

Intake::Intake(const TableDescriptor& table, const Options& options, Counters& counters,
               Spill* spill)
    : table_(table),
      options_(options),
      counters_(counters),
      spill_(spill),
      pool_(make_pool(table, options)),
      // Blocks for every slot up front, plus a spare block per writer and
      // a few producers. A producer token keeps every block it has used
      // (moodycamel's explicit producers never return them), so as the
      // producers' shares of the pool shift, each token's ring can grow
      // towards the pool's capacity: at most ~10.5 bytes per slot per
      // producer source, allocated while warming up, never per record.
      queue_(options.capacity + 32 * (options.writers + 8)),
      registry_(std::make_shared<ProducerRegistry>(queue_, pool_, options.source_id_base,
                                                   pool_.source_table())),
      overflow_offset_(overflow_offset(table.record_align)) {}

Intake::~Intake() {
  // Tokens refer to the queue: destroy them while it still exists.
  registry_->shutdown();
}

std::byte* Intake::acquire_slow(Status* status) noexcept {
  if (closing_.load(std::memory_order_acquire)) {
    *status = Status::closed;
    return nullptr;
  }
  SlotHeader* s = nullptr;
  switch (options_.overflow) {
    case Overflow::drop:
      counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      *status = Status::dropped;
      return nullptr;
    case Overflow::fail:
      counters_.pool_exhausted.fetch_add(1, std::memory_order_relaxed);
      *status = Status::pool_exhausted;
      return nullptr;
    case Overflow::spill:
      if (std::byte* r = overflow_record()) return r;
      [[fallthrough]];  // a second acquire() before the first commit: wait as block does
    case Overflow::block:
      s = acquire_blocking(status, clock::now());
      break;
  }
  if (s == nullptr) return nullptr;
  if (closing_.load(std::memory_order_seq_cst)) return refuse_taken(s, status);
  return pool_.record(s);
}

std::byte* Intake::refuse_taken(SlotHeader* s, Status* status) noexcept {
  {
    detail::MutexLock lock(close_count_mutex_);
    // Seen being filled by count_at_close(), and so reported: counted
    // as the report says. Otherwise a record offered after close() began
    // (also one taken from a magazine after the report), counted nowhere.
    const auto seen = std::find(counted_filling_.begin(), counted_filling_.end(), s->index);
    if (seen != counted_filling_.end()) {
      counted_filling_.erase(seen);
      counters_.abandoned.fetch_add(1, std::memory_order_relaxed);
    }
    pool_.release(&s, 1);
  }
  *status = Status::closed;
  return nullptr;
}

Intake::CloseCount Intake::count_at_close() {
  detail::MutexLock lock(close_count_mutex_);
  counted_at_close_ = true;
  std::size_t held = registry_->overflow_records_in_use();
  for (std::size_t i = 0; i < pool_.capacity(); ++i) {
    if (pool_.slot(i)->state.load(std::memory_order_acquire) ==
        static_cast<std::uint32_t>(SlotState::filling)) {
      counted_filling_.push_back(static_cast<std::uint32_t>(i));
      ++held;
    }
  }
  return {held + static_cast<std::size_t>(refused_before_count_),
          counters_.abandoned.load(std::memory_order_relaxed) + held};
}

SlotHeader* Intake::acquire_blocking(Status* status, clock::time_point t0) noexcept {
  // A full pool means writers should not wait for fuller batches.
  signal_.wake_all();
  SlotHeader* s = pool_.acquire_until(t0 + options_.max_wait, closing_);
  const auto waited =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
  counters_.blocked.fetch_add(1, std::memory_order_relaxed);
  counters_.producer_wait_ns.record(static_cast<std::uint64_t>(waited));
  if (s == nullptr) {
    if (closing_.load(std::memory_order_acquire)) {
      *status = Status::closed;
    } else {
      counters_.timed_out.fetch_add(1, std::memory_order_relaxed);
      *status = Status::timed_out;
    }
  }
  return s;
}

void Intake::abandon(std::byte* record) noexcept {
  auto give_back = [&] {
    if (orphaned()) {
      // The parent's slot (or overflow record): its thread still holds it there.
    } else if (!pool_.contains(record)) {
      owner_of_overflow_record(record)->spill_record_in_use.store(false, std::memory_order_relaxed);
    } else {
      SlotHeader* s = pool_.slot_of(record);
      pool_.release(&s, 1);
    }
  };
  if (stopped_.load(std::memory_order_acquire)) {
    refuse_after_stop(give_back,
                      pool_.contains(record) ? pool_.slot_of(record)->index : UINT32_MAX);
    return;
  }
  give_back();
  counters_.abandoned.fetch_add(1, std::memory_order_relaxed);
}

Producer* Intake::owner_of_overflow_record(std::byte* record) const noexcept {
  return reinterpret_cast<OverflowHeader*>(record - overflow_offset_)->producer;
}

// Reset to the prototype; nullptr if the source's one overflow record is
// in use already (a second acquire() before the first was committed) or
// cannot be allocated.
std::byte* Intake::overflow_record() noexcept {
  Producer* p = nullptr;
  try {
    p = registry_->current();
    if (p->spill_record == nullptr) {
      const std::size_t align = overflow_alignment(table_.record_align);
      p->spill_storage.reset(new std::byte[overflow_offset_ + table_.record_size + align]);
      const auto base = reinterpret_cast<std::uintptr_t>(p->spill_storage.get());
      p->spill_record = reinterpret_cast<std::byte*>((base + align - 1) / align * align);
    }
  } catch (...) {
    return nullptr;
  }
  if (p->spill_record_in_use.load(std::memory_order_relaxed)) return nullptr;
  p->spill_record_in_use.store(true, std::memory_order_relaxed);
  reinterpret_cast<OverflowHeader*>(p->spill_record)->producer = p;
  std::byte* record = p->spill_record + overflow_offset_;
  std::memcpy(record, table_.prototype, table_.record_size);
  return record;
}

std::size_t Intake::take_recovered(SlotHeader** out, std::size_t max) noexcept {
  // Writers claim disjoint runs of the list; one that claims past its end
  // takes none (and the index stays past it).
  const std::size_t begin = recovered_next_.fetch_add(max, std::memory_order_relaxed);
  if (begin >= recovered_.size()) return 0;
  const std::size_t n = std::min(max, recovered_.size() - begin);
  std::copy_n(recovered_.begin() + static_cast<std::ptrdiff_t>(begin), n, out);
  return n;
}

// Appended to the spill directory, or, if that is full or failing, copied
// into a pool slot after waiting as Overflow::block does. A keyed record
// keeps its key on either way.
Status Intake::commit_outside_pool(std::byte* record, const RecordKey* key) noexcept {
  if (stopped_.load(std::memory_order_acquire)) {
    // Closed (its spill directory let go, perhaps another logger's now), or
    // a fork() child's: not into the spill directory.
    refuse_after_stop([&] {
      if (!orphaned())
        owner_of_overflow_record(record)->spill_record_in_use.store(false,
                                                                    std::memory_order_relaxed);
    });
    return Status::closed;
  }
  // The append's own time counts against max_wait: a producer never waits
  // longer than that for the spill and the pool together.
  const clock::time_point t0 = clock::now();
  Producer* p = owner_of_overflow_record(record);
  const std::int64_t source_id = key ? key->source_id : p->source_id;
  const std::int64_t seq = key ? key->seq : p->next_seq->load(std::memory_order_relaxed);
  // The counter moves before the record is on disk: a kill once the append's
  // write() returned must not leave the durable pool's counter at `seq`, to
  // be handed out again at the restart and the spilled record or the new
  // one dropped as the other's duplicate (a new user's kill -9 trial lost
  // about two acknowledged records per restart so). Put back if the spill
  // refuses it: the pool path below takes `seq`.
  if (key == nullptr) {
    p->next_seq->store(seq + 1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // not moved past the append
  }
  if (spill_->append_overflow(source_id, seq, record)) {
    if (key != nullptr) {
      // The committing thread's own counter (it may not be the owner's).
      Producer* me = registry_->current();
      me->keyed_committed.store(me->keyed_committed.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    }
    p->spill_record_in_use.store(false, std::memory_order_relaxed);
    return Status::ok;
  }
  if (key == nullptr) p->next_seq->store(seq, std::memory_order_relaxed);
  Status status = Status::ok;
  SlotHeader* s = acquire_blocking(&status, t0);
  if (s == nullptr) {
    p->spill_record_in_use.store(false, std::memory_order_relaxed);
    return status;
  }
  std::byte* slot_record = pool_.record(s);
  std::memcpy(slot_record, record, table_.record_size);
  p->spill_record_in_use.store(false, std::memory_order_relaxed);
  return commit_as(slot_record, nullptr, key);
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> Intake::committed_now() const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::size_t i = 0; i < pool_.capacity(); ++i) {
    SlotHeader* s = pool_.slot(i);
    const std::uint32_t generation = s->generation.load(std::memory_order_acquire);
    if (s->state.load(std::memory_order_acquire) ==
        static_cast<std::uint32_t>(SlotState::committed)) {
      out.emplace_back(static_cast<std::uint32_t>(i), generation);
    }
  }
  return out;
}

std::vector<SlotHeader*> Intake::committed_slots() const {
  std::vector<SlotHeader*> out;
  for (std::size_t i = 0; i < pool_.capacity(); ++i) {
    SlotHeader* s = pool_.slot(i);
    if (s->state.load(std::memory_order_acquire) ==
        static_cast<std::uint32_t>(SlotState::committed)) {
      out.push_back(s);
    }
  }
  return out;
}

std::size_t Intake::committed_count() const noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < pool_.capacity(); ++i) {
    n += pool_.slot(i)->state.load(std::memory_order_acquire) ==
         static_cast<std::uint32_t>(SlotState::committed);
  }
  return n;
}

std::size_t Intake::uncommitted() const {
  std::size_t n = registry_->overflow_records_in_use();
  for (std::size_t i = 0; i < pool_.capacity(); ++i) {
    n += pool_.slot(i)->state.load(std::memory_order_acquire) ==
         static_cast<std::uint32_t>(SlotState::filling);
  }
  return n;
}

void Intake::orphan() noexcept {
  orphaned_.store(true, std::memory_order_relaxed);
  closing_.store(true, std::memory_order_seq_cst);
  stopped_.store(true, std::memory_order_seq_cst);
  // acquire() then goes to acquire_slow(), which sees closing_ first.
  pool_.divert_acquirers();
  // A thread that exits in the child (exit() runs thread_local destructors)
  // would give its magazine back under the pool's mutex, which a parent's
  // thread may have held at the fork, into a pool that may be the parent's
  // shared mapping.
  registry_->orphan();
  // The child's copies of the descriptors of the durable pool's file and
  // the spill directory's lock, and the pool's shared mapping: the parent's
  // (the locks are record locks, which a child never holds: OwnedFile).
  if (PoolFile* file = pool_.file()) file->let_go_in_fork_child();
  if (spill_ != nullptr) spill_->let_go_in_fork_child();
}

void Intake::begin_close() noexcept {
  closing_.store(true, std::memory_order_seq_cst);
  // Also the barrier acquire() pairs with: a slot taken from a magazine
  // before it is in use after it.
  pool_.reclaim_all();
  pool_.wake_waiters();
}

}  // namespace auditpipe::internal
