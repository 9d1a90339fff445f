// The SQLite database files this process's connections have open, and which
// process opened each: so that a fork() child refuses a file its parent had
// open at the fork.
//
// SQLite keeps one record per open file per process (its locks, the
// write-ahead log's shared-memory index and the locks on it), found by
// device and inode and shared by every connection of the process to that
// file. A fork() child inherits the parent's records but none of the
// parent's POSIX locks; a connection the child opens to the same file takes
// those records for its own and believes it holds locks it does not, so it
// writes beside the parent's connections without excluding them (a trial:
// workers of a pre-forking server whose parent made its SQLite logger
// before forking lost 7,064 of 10,000 rows, each reporting all of its own
// written; others waited on "database is locked" until close()'s deadline).
// SQLite's records cannot be dropped in the child (closing the inherited
// connection there would unlock or checkpoint as the parent), so the open
// is refused, saying why.
//
// Who may call: open_connection(): an OpenGate around its first open (the
// check before it, the note once SQLite has its record of the file); the
// note lives as long as the connection.
//
// Thread safety: any thread; the list's mutex is held across fork(), and
// by a gate from its check to its note, so that no fork() falls between
// SQLite's record of the file and the note of it.
#pragma once

#include <sys/types.h>

#include <string>

namespace auditpipe::sqlite {

class OpenFileNote;

// For fork_guard's handlers, which take the list before SQLite's mutexes: a
// gate holds it while SQLite's open takes those.
void hold_list_for_fork();
void let_go_list_after_fork();

// Holds the list from construction to destruction. The constructor throws
// auditpipe::error if `path` names a file that a connection of another
// process (this one's parent, or an earlier ancestor) had open when this
// process was forked from it; note() then notes the file as open here.
class OpenGate {
 public:
  explicit OpenGate(const std::string& path);
  ~OpenGate();
  OpenGate(const OpenGate&) = delete;
  OpenGate& operator=(const OpenGate&) = delete;
  OpenFileNote note();

 private:
  const std::string& path_;
};

// `path`'s file noted as open in this process for as long as it lives.
class OpenFileNote {
 public:
  OpenFileNote() = default;
  ~OpenFileNote();
  OpenFileNote(const OpenFileNote&) = delete;
  OpenFileNote& operator=(const OpenFileNote&) = delete;
  OpenFileNote(OpenFileNote&& other) noexcept;
  OpenFileNote& operator=(OpenFileNote&& other) noexcept;

 private:
  friend class OpenGate;
  void forget() noexcept;

  bool noted_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

}  // namespace auditpipe::sqlite
