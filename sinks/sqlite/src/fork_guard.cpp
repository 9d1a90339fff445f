// See fork_guard.h.
#include "fork_guard.h"

#include <pthread.h>
#include <sqlite3.h>

#include <array>
#include <mutex>

namespace auditpipe::sqlite {
namespace {

// In the order SQLite itself may nest them (the VFS's around an
// allocation; the allocator's is a leaf), so that taking them here waits
// for a writer to finish and never for a writer waiting on us.
constexpr std::array<int, 3> guarded = {SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_PRNG,
                                        SQLITE_MUTEX_STATIC_MEM};

void take_all() {
  for (const int id : guarded) sqlite3_mutex_enter(sqlite3_mutex_alloc(id));
}

void let_go_all() {
  for (auto id = guarded.rbegin(); id != guarded.rend(); ++id)
    sqlite3_mutex_leave(sqlite3_mutex_alloc(*id));
}

}  // namespace

void guard_sqlite_mutexes_across_fork() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(take_all, let_go_all, let_go_all); });
}

}  // namespace auditpipe::sqlite
