// Housekeeper: one thread for a logger's periodic chores, so that no writer
// carries them between batches: syncing the spill directory to disk, saving
// the TSC calibration into a durable pool's file, and the periodic summary
// line. Each chore runs at its own interval until stop().
//
// Owned by the pipeline, which registers the chores before start(); a chore
// must not block for long (a slow one delays the others, never a producer
// or a writer).
//
// Thread safety: start() and stop() from one thread (the pipeline's
// constructor and close()); the chores run on the housekeeper's thread.
#pragma once

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "auditpipe/detail/thread_annotations.h"

namespace auditpipe::internal {

class Housekeeper {
 public:
  using clock = std::chrono::steady_clock;

  Housekeeper() = default;
  ~Housekeeper();
  Housekeeper(const Housekeeper&) = delete;
  Housekeeper& operator=(const Housekeeper&) = delete;

  // Runs `chore` every `interval` (positive) once started.
  void every(clock::duration interval, std::function<void()> chore);
  // Starts the thread, if there is any chore.
  void start();
  // Runs every chore once more, then ends the thread. Safe to call twice.
  void stop();

 private:
  struct Chore {
    clock::duration interval;
    std::function<void()> run;
    clock::time_point due;
  };
  void run();

  std::vector<Chore> chores_;  // fixed once started; only the thread reads it then
  detail::Mutex mutex_;
  detail::CondVar cv_;
  bool stopping_ AUDITPIPE_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace auditpipe::internal
