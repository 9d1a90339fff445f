#include "durable/owned_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe::internal {

namespace {

struct Held {
  std::vector<std::pair<dev_t, ino_t>> files AUDITPIPE_GUARDED_BY(mutex);
  detail::Mutex mutex;

  bool listed(dev_t device, ino_t inode) const AUDITPIPE_REQUIRES(mutex) {
    return std::find(files.begin(), files.end(), std::pair{device, inode}) != files.end();
  }
};

// Never destroyed: a fork handler holds its mutex. Nothing else is taken
// while it is held, so the order among fork handlers does not matter.
Held& held() {
  static Held* const list = [] {
    auto* made = new Held;
    pthread_atfork([]() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { held().mutex.lock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS { held().mutex.unlock(); },
                   []() AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS {
                     held().files.clear();
                     held().mutex.unlock();
                   });
    return made;
  }();
  return *list;
}

// Made as the library loads: a child forked while another thread made it
// would wait for ever for that thread's static initialization.
[[maybe_unused]] const Held& held_made_at_load = held();

}  // namespace

OwnedFile::Taken OwnedFile::take(const std::filesystem::path& path, int flags, mode_t mode) {
  release();
  error_ = 0;
  lock_failed_ = false;
  Held& list = held();
  detail::MutexLock lock(list.mutex);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && list.listed(st.st_dev, st.st_ino)) return Taken::in_use;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | flags, mode);
  if (fd < 0) {
    error_ = errno;
    return Taken::failed;
  }
  if (::fstat(fd, &st) != 0) {
    error_ = errno;
    ::close(fd);
    return Taken::failed;
  }
  // Replaced between the stat and the open by a file held here: closing
  // this descriptor would let go of the holder's lock, so it stays open.
  if (list.listed(st.st_dev, st.st_ino)) return Taken::in_use;
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;  // l_start 0, l_len 0: the whole file, however long
  if (::fcntl(fd, F_SETLK, &whole) != 0) {
    const int why = errno;
    ::close(fd);  // not held in this process: no lock of ours goes with it
    if (why == EACCES || why == EAGAIN) return Taken::in_use;
    error_ = why;
    lock_failed_ = true;
    return Taken::failed;
  }
  list.files.emplace_back(st.st_dev, st.st_ino);
  fd_ = fd;
  device_ = st.st_dev;
  inode_ = st.st_ino;
  return Taken::owned;
}

void OwnedFile::release() noexcept {
  if (fd_ < 0) return;
  Held& list = held();
  detail::MutexLock lock(list.mutex);
  std::erase(list.files, std::pair{device_, inode_});
  ::close(fd_);  // under the mutex: a take() of the same file waits for it
  fd_ = -1;
}

bool OwnedFile::still_at(const std::filesystem::path& path) const noexcept {
  if (fd_ < 0) return false;
  struct stat held {
  }, named{};
  return ::fstat(fd_, &held) == 0 && held.st_nlink > 0 && ::stat(path.c_str(), &named) == 0 &&
         named.st_dev == device_ && named.st_ino == inode_;
}

void OwnedFile::swap(OwnedFile& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(error_, other.error_);
  std::swap(lock_failed_, other.lock_failed_);
  std::swap(device_, other.device_);
  std::swap(inode_, other.inode_);
}

void OwnedFile::close_in_fork_child() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace auditpipe::internal
