// See digest_thread.h.
#include "digest_thread.h"

#include <utility>

namespace auditpipe {

DigestThread::DigestThread(const SealWriter& sealer)
    : sealer_(sealer), thread_([this] { run(); }) {}

DigestThread::~DigestThread() {
  wait();
  {
    detail::MutexLock lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

void DigestThread::begin(const Batch& batch) {
  {
    detail::MutexLock lock(mutex_);
    batch_ = &batch;
    failed_ = nullptr;
  }
  work_cv_.notify_one();
}

SealWriter::BatchSeal DigestThread::finish() {
  detail::MutexLock lock(mutex_);
  while (batch_ != nullptr) done_cv_.wait(mutex_);
  if (failed_) std::rethrow_exception(std::exchange(failed_, nullptr));
  return std::move(result_);
}

void DigestThread::wait() noexcept {
  detail::MutexLock lock(mutex_);
  while (batch_ != nullptr) done_cv_.wait(mutex_);
  failed_ = nullptr;
  result_ = {};
}

void DigestThread::run() {
  for (;;) {
    const Batch* batch = nullptr;
    {
      detail::MutexLock lock(mutex_);
      while (batch_ == nullptr && !stop_) work_cv_.wait(mutex_);
      if (batch_ == nullptr) return;
      batch = batch_;
    }
    SealWriter::BatchSeal digested;
    std::exception_ptr failed;
    try {
      digested = sealer_.digest(*batch);
    } catch (...) {
      failed = std::current_exception();
    }
    detail::MutexLock lock(mutex_);
    result_ = std::move(digested);
    failed_ = std::move(failed);
    batch_ = nullptr;
    done_cv_.notify_one();
  }
}

}  // namespace auditpipe
