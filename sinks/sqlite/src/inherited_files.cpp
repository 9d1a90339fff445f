// See inherited_files.h.
#include "inherited_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"
#include "auditpipe/status.h"

namespace auditpipe::sqlite {
namespace {

struct Entry {
  dev_t device;
  ino_t inode;
  pid_t opener;
};

struct OpenFiles {
  detail::Mutex mutex;
  std::vector<Entry> entries AUDITPIPE_GUARDED_BY(mutex);
};

// Never destroyed: a fork handler holds its mutex, and a connection may
// close after static destruction began.
OpenFiles& open_files() {
  static OpenFiles* const files = new OpenFiles;
  return *files;
}

// Made as the library loads: a child forked while another thread made it
// would wait for ever for that thread's static initialization.
[[maybe_unused]] const OpenFiles& open_files_made_at_load = open_files();

}  // namespace

void hold_list_for_fork() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
  open_files().mutex.lock();
}

void let_go_list_after_fork() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
  open_files().mutex.unlock();
}

OpenGate::OpenGate(const std::string& path) AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS : path_(path) {
  open_files().mutex.lock();  // let go in the destructor: outside the analysis
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // not there yet: nobody has it open
  const pid_t self = ::getpid();
  pid_t opener = 0;
  for (const Entry& e : open_files().entries) {
    if (e.device == st.st_dev && e.inode == st.st_ino && e.opener != self) opener = e.opener;
  }
  if (opener == 0) return;
  open_files().mutex.unlock();
  throw error("auditpipe: SQLite database '" + path +
              "' was open in the process this one was forked from (pid " + std::to_string(opener) +
              ", through a logger or connection made before fork()): SQLite's own records of "
              "the file's locks came across the fork without the locks, and a connection "
              "opened here would write without them, losing rows. Make the parent's logger "
              "after forking its workers, or give each process a database file of its own");
}

OpenGate::~OpenGate() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
  open_files().mutex.unlock();
}

OpenFileNote OpenGate::note() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
  OpenFileNote n;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return n;  // ":memory:"
  n.device_ = st.st_dev;
  n.inode_ = st.st_ino;
  open_files().entries.push_back(Entry{n.device_, n.inode_, ::getpid()});
  n.noted_ = true;
  return n;
}

OpenFileNote::~OpenFileNote() {
  forget();
}

OpenFileNote::OpenFileNote(OpenFileNote&& other) noexcept
    : noted_(std::exchange(other.noted_, false)), device_(other.device_), inode_(other.inode_) {}

OpenFileNote& OpenFileNote::operator=(OpenFileNote&& other) noexcept {
  if (this != &other) {
    forget();
    noted_ = std::exchange(other.noted_, false);
    device_ = other.device_;
    inode_ = other.inode_;
  }
  return *this;
}

void OpenFileNote::forget() noexcept {
  if (!noted_) return;
  noted_ = false;
  const pid_t self = ::getpid();
  OpenFiles& files = open_files();
  detail::MutexLock lock(files.mutex);
  // One of this process's entries for the file (several connections may
  // have it open); a child's copy of its parent's note removes nothing.
  const auto it = std::find_if(files.entries.begin(), files.entries.end(), [&](const Entry& e) {
    return e.device == device_ && e.inode == inode_ && e.opener == self;
  });
  if (it != files.entries.end()) files.entries.erase(it);
}

}  // namespace auditpipe::sqlite
