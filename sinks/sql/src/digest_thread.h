// DigestThread: a thread kept to digest a writer's batch (SealWriter::
// digest()) while the writer's own thread runs the batch's statement, so
// that sealing adds no time to the writer's turn around the database.
// Kept from batch to batch: a thread started per batch cost the sealed
// PostgreSQL sink about 20 ns of client CPU per row (its clone, its
// stack's and heap's first page faults; perf of bench/sink_ceiling), on a
// machine whose cores the server shares.
//
// Who may call: SealWriter, which keeps the idle ones, and the writer that
// took one (SqlSink::write_on()).
//
// Thread safety: one writer at a time: begin(), then finish() or wait().
#pragma once

#include <exception>
#include <thread>

#include "auditpipe/detail/thread_annotations.h"
#include "seal_writer.h"

namespace auditpipe {

class DigestThread {
 public:
  /// Starts the thread. Throws std::system_error if there is none to be had.
  explicit DigestThread(const SealWriter& sealer);
  /// Waits for a digest in progress, then ends the thread.
  ~DigestThread();
  DigestThread(const DigestThread&) = delete;
  DigestThread& operator=(const DigestThread&) = delete;

  /// Digests `batch` from now on; its records must stay put until wait()
  /// or finish() returns.
  void begin(const Batch& batch) AUDITPIPE_EXCLUDES(mutex_);
  /// Waits for the digest begun; returns it, or throws what digest() threw.
  SealWriter::BatchSeal finish() AUDITPIPE_EXCLUDES(mutex_);
  /// Waits for the digest begun, if any, and drops it.
  void wait() noexcept AUDITPIPE_EXCLUDES(mutex_);

 private:
  void run() AUDITPIPE_EXCLUDES(mutex_);

  const SealWriter& sealer_;
  detail::Mutex mutex_;
  detail::CondVar work_cv_;                                    ///< a batch, or stop
  detail::CondVar done_cv_;                                    ///< its digest
  const Batch* batch_ AUDITPIPE_GUARDED_BY(mutex_) = nullptr;  ///< begun, not yet digested
  bool stop_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  SealWriter::BatchSeal result_ AUDITPIPE_GUARDED_BY(mutex_);
  std::exception_ptr failed_ AUDITPIPE_GUARDED_BY(mutex_);
  std::thread thread_;  ///< last: started once the rest is
};

}  // namespace auditpipe
