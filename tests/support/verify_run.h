// run_verify(): `auditpipe verify` (the tool at AUDITPIPE_CLI, which the
// test's CMake target defines) of one table, its exit status and what it
// printed, for tests that check a sealed table as a user's cron job would.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace testing_support {

struct VerifyRun {
  int status = -1;  ///< verify's exit status; -1 if it did not exit
  std::string out;  ///< its standard output and error
};

/// verify --quiet `url` --table `table` `args` (shell words).
inline VerifyRun run_verify(const std::string& url, const std::string& table,
                            const std::string& args = "") {
  const std::string command = std::string(AUDITPIPE_CLI) + " verify --quiet '" + url +
                              "' --table " + table + " " + args + " 2>&1";
  VerifyRun run;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    run.out = "cannot run " + command;
    return run;
  }
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) run.out.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) run.status = WEXITSTATUS(status);
  return run;
}

}  // namespace testing_support
