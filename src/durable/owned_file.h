// OwnedFile: a file one logger holds for itself from start to close (a spill
// directory's lock file, a durable pool file), against every other logger,
// in this process and in others. Used by SpillWriter and PoolFile only.
//
// The hold is a POSIX record lock (fcntl F_SETLK) on the whole file, not
// flock(): an flock belongs to the open file description, which fork()
// shares with the child, so a parent that closed its logger and started
// another at once was refused for as long as the child had not yet run its
// fork handler (which closes its copy), and a child made without fork
// handlers kept the file locked for its whole life. A record lock belongs to
// the process, and a child never has its parent's.
//
// Two things come with record locks, and this class covers both: they do
// not exclude within one process, so the files held here are also listed
// (by device and inode); and any close() of any descriptor of the file lets
// go of the process's lock, so a file on that list is never opened again
// here: a second logger is refused before it opens it.
//
// Thread safety: any thread. The list's mutex is held across fork(), and
// the child starts with an empty list (everything on it was the parent's).
#pragma once

#include <sys/types.h>

#include <filesystem>

namespace auditpipe::internal {

class OwnedFile {
 public:
  enum class Taken { owned, in_use, failed };

  OwnedFile() = default;
  ~OwnedFile() { release(); }
  OwnedFile(const OwnedFile&) = delete;
  OwnedFile& operator=(const OwnedFile&) = delete;

  // Opens `path` (O_RDWR | O_CLOEXEC | `flags`, `mode` if it is created) and
  // holds it. On `failed`, error() is the errno of what failed and
  // lock_failed() whether the lock did (the open succeeded); on `in_use`
  // another logger holds it. On either nothing is held, and nothing is open
  // but in one case: the path replaced, between the check and the open, by
  // a file held here (closing that descriptor would let go of its holder's
  // lock, so it stays open until the process ends).
  //
  // The list's mutex is held around the open and the lock, so a fork() in
  // any thread waits for them (on a slow network filesystem, for as long).
  Taken take(const std::filesystem::path& path, int flags, mode_t mode);

  int fd() const noexcept { return fd_; }
  int error() const noexcept { return error_; }
  bool lock_failed() const noexcept { return lock_failed_; }

  // Closes the file and takes it off the list: another logger may have it.
  void release() noexcept;
  // In a fork() child: closes the child's copy of the descriptor (the lock
  // is the parent's, and the child's list was emptied at the fork).
  void close_in_fork_child() noexcept;
  // Whether `path` still names the file held (not removed, moved or
  // replaced since it was taken). False when nothing is held.
  bool still_at(const std::filesystem::path& path) const noexcept;
  // Exchanges what the two hold (the list names files, not holders).
  void swap(OwnedFile& other) noexcept;

 private:
  int fd_ = -1;
  int error_ = 0;
  bool lock_failed_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

}  // namespace auditpipe::internal
