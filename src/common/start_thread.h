// start_thread: a std::thread, or an auditpipe::error saying why there is
// none. Creating a thread fails when the process is at a limit (RLIMIT_NPROC,
// RLIMIT_AS, a cgroup's pids.max): std::thread throws std::system_error (or
// std::bad_alloc), which said only "Resource temporarily unavailable" and
// was no auditpipe::error. Every owner of a thread starts it through this
// and, when it throws, stops and joins the threads it had started already
// (a joinable std::thread destroyed in the unwinding would terminate the
// process; one never told to stop would be joined for ever).
//
// Who may call: the library's own thread owners (the pipeline's writers and
// housekeeper, the SQL sinks' connection pool; the seal writer catches
// std::system_error itself and does without its threads).
#pragma once

#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "auditpipe/status.h"

namespace auditpipe::internal {

template <class Body>
std::thread start_thread(std::string_view what, Body&& body) {
  std::string why;
  try {
    return std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    why = e.code().message();
  } catch (const std::bad_alloc&) {
    why = "out of memory";
  }
  throw error("auditpipe: cannot start " + std::string(what) + ": " + why +
              " (the process may be at a limit on threads or memory: RLIMIT_NPROC, RLIMIT_AS, "
              "a cgroup's pids.max)");
}

}  // namespace auditpipe::internal
