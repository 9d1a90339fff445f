// See fork_guard.h.
#include "fork_guard.h"

#include "inherited_files.h"

#include <pthread.h>
#include <sqlite3.h>

#include <array>

namespace auditpipe::sqlite {
namespace {

// In the order SQLite itself may nest them (the VFS's around an
// allocation; the allocator's is a leaf), so that taking them here waits
// for a writer to finish and never for a writer waiting on us.
constexpr std::array<int, 3> guarded = {SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_PRNG,
                                        SQLITE_MUTEX_STATIC_MEM};

// The list of files this process has open first (inherited_files.h): an
// open holds it around SQLite's own open, which takes the VFS mutex.
void take_all() {
  hold_list_for_fork();
  for (const int id : guarded) sqlite3_mutex_enter(sqlite3_mutex_alloc(id));
}

void let_go_all() {
  for (auto id = guarded.rbegin(); id != guarded.rend(); ++id)
    sqlite3_mutex_leave(sqlite3_mutex_alloc(*id));
  let_go_list_after_fork();
}

// Registered as the library loads, not at the first open: a child forked
// while another thread was inside a once-only registration would wait for
// ever for it at its own first open.
[[maybe_unused]] const int registered_at_load = pthread_atfork(take_all, let_go_all, let_go_all);

}  // namespace

void guard_sqlite_mutexes_across_fork() {
  // Nothing left to do: calling it links this file, and with it the
  // registration above, into a program built with the static library.
}

}  // namespace auditpipe::sqlite
