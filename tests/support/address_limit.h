// start_under_address_limits: how something that starts threads behaves
// when they cannot all be started. In a child (this test alone, in a new
// process: a process that ran other tests has thread stacks cached, which
// glibc reuses without asking for memory), whose address space
// (RLIMIT_AS) is limited to what it maps plus a margin, one margin after
// another (0 to 96 MiB by 1 MiB: each thread's stack takes 8 MiB), calls
// `start`, lifts the limit, and calls the `finish` it returned (if it
// returned one). Not under the sanitizers (callers skip): their runtimes
// reserve more address space than any limit leaves.
//
// The child's exit status: 0 when some starts worked and some failed with
// an auditpipe::error saying a thread could not be started (std::bad_alloc
// is let pass: memory the limit left too little of); 3 for another
// exception; 4 for a finish that returned false; 5 when the margins never
// hit a failed thread start; 6 when it could not be started; -1 when it hung (killed after
// `seconds`), -2 when a signal ended it (std::terminate's abort).
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <string>

#include "auditpipe/status.h"
#include "child_exit.h"

namespace testing_support {

inline constexpr const char* address_limit_child = "AUDITPIPE_TEST_ADDRESS_LIMIT_CHILD";

[[noreturn]] inline void sweep_address_limits(const std::function<std::function<bool()>()>& start) {
  auto mapped = [] {
    std::ifstream statm("/proc/self/statm");
    std::uint64_t pages = 0;
    statm >> pages;
    return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  };
  rlimit unlimited{};
  getrlimit(RLIMIT_AS, &unlimited);
  int started = 0, cannot_start = 0;
  for (std::uint64_t margin = 0; margin <= (96u << 20); margin += 1u << 20) {
    std::function<bool()> finish;
    rlimit limited = unlimited;
    limited.rlim_cur = mapped() + margin;
    setrlimit(RLIMIT_AS, &limited);
    try {
      finish = start();
    } catch (const auditpipe::error& e) {
      cannot_start += std::string(e.what()).find("cannot start") != std::string::npos;
    } catch (const std::bad_alloc&) {
    } catch (...) {
      _exit(3);
    }
    setrlimit(RLIMIT_AS, &unlimited);
    if (finish) {
      if (!finish()) _exit(4);
      ++started;
    }
  }
  _exit(started > 0 && cannot_start > 0 ? 0 : 5);
}

inline int start_under_address_limits(const std::function<std::function<bool()>()>& start,
                                      int seconds = 120) {
  if (std::getenv(address_limit_child) != nullptr) sweep_address_limits(start);
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter =
      std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();
  const pid_t child = fork();
  if (child == -1) return -3;
  if (child == 0) {
    setenv(address_limit_child, "1", 1);
    execl("/proc/self/exe", "address-limit-child", filter.c_str(), static_cast<char*>(nullptr));
    _exit(6);
  }
  return exit_status_within(child, seconds);
}

}  // namespace testing_support
