// exit_status_within: waiting for a forked child with a limit, so that a
// child that hangs fails its test instead of stalling it until ctest's
// timeout (and is not left running).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace testing_support {

// Waits up to `seconds` for `pid`; its exit status, -2 if a signal ended
// it, or -1 if it did not end: then it is killed, with its process group
// if it leads one (workers left behind would hold the test's output open).
inline int exit_status_within(pid_t pid, int seconds) {
  int status = 0;
  for (int i = 0; i < seconds * 10; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (getpgid(pid) == pid) kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

}  // namespace testing_support
