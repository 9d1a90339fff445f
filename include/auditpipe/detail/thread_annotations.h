// Lock discipline the compiler checks: clang's -Wthread-safety attributes
// (as LevelDB's port/thread_annotations.h has them) and a mutex, lock and
// condition variable that carry them. libstdc++'s std::mutex has none, so
// members are guarded by auditpipe::detail::Mutex instead; under GCC the
// attributes expand to nothing and the wrappers are std::mutex underneath.
//
// Not part of the API: included by the headers of classes that keep private
// members under a lock (the connection pool), and by the engine's own rooms.
//
// Thread safety: Mutex is a mutex; MutexLock and the CondVar calls follow it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define AUDITPIPE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define AUDITPIPE_THREAD_ANNOTATION(x)
#endif

#define AUDITPIPE_CAPABILITY(x) AUDITPIPE_THREAD_ANNOTATION(capability(x))
#define AUDITPIPE_SCOPED_CAPABILITY AUDITPIPE_THREAD_ANNOTATION(scoped_lockable)
#define AUDITPIPE_GUARDED_BY(x) AUDITPIPE_THREAD_ANNOTATION(guarded_by(x))
#define AUDITPIPE_PT_GUARDED_BY(x) AUDITPIPE_THREAD_ANNOTATION(pt_guarded_by(x))
#define AUDITPIPE_REQUIRES(...) AUDITPIPE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define AUDITPIPE_EXCLUDES(...) AUDITPIPE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define AUDITPIPE_ACQUIRE(...) AUDITPIPE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define AUDITPIPE_RELEASE(...) AUDITPIPE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define AUDITPIPE_NO_THREAD_SAFETY_ANALYSIS AUDITPIPE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace auditpipe::detail {

class AUDITPIPE_CAPABILITY("mutex") Mutex {
 public:
  void lock() AUDITPIPE_ACQUIRE() { m_.lock(); }
  void unlock() AUDITPIPE_RELEASE() { m_.unlock(); }
  // For a mutex held only for a few hundred nanoseconds at a time: a
  // sleeping waiter's wake-up would cost microseconds, so try for about
  // that long before sleeping.
  void lock_spinning() AUDITPIPE_ACQUIRE() {
    for (int i = 0; i < 256; ++i) {
      if (m_.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    m_.lock();
  }

 private:
  friend class CondVar;
  std::mutex m_;
};

// Holds a Mutex for its scope.
class AUDITPIPE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) AUDITPIPE_ACQUIRE(m) : m_(m) { m_.lock(); }
  struct Spinning {};
  // Mutex::lock_spinning().
  MutexLock(Mutex& m, Spinning) AUDITPIPE_ACQUIRE(m) : m_(m) { m_.lock_spinning(); }
  ~MutexLock() AUDITPIPE_RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

// A condition variable waited on with a held Mutex (the analysis sees the
// mutex held across the wait, as it is on return).
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  void wait(Mutex& m) AUDITPIPE_REQUIRES(m) {
    std::unique_lock<std::mutex> lock(m.m_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(Mutex& m, const std::chrono::time_point<Clock, Duration>& deadline)
      AUDITPIPE_REQUIRES(m) {
    std::unique_lock<std::mutex> lock(m.m_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace auditpipe::detail
