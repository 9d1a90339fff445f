// SQLite's global mutexes across fork(): a writer thread of a SQLite logger
// may hold one (the allocator's, inside every sqlite3_malloc; the unix
// VFS's, opening a journal; the random generator's) at the moment another
// thread forks, and the child, which has no such thread, then waits for it
// for ever when it opens a database of its own (a trial: 3 to 5 of 20
// children of a busy parent). The forking thread takes them just before
// the fork and both processes let them go after it (pthread_atfork).
//
// Who may call: open_connection(), before its first SQLite call.
//
// Thread safety: any thread; registered as the library loads.
#pragma once

namespace auditpipe::sqlite {

void guard_sqlite_mutexes_across_fork();

}  // namespace auditpipe::sqlite
