// kill_durable_child(): the "application killed" run of the fault tests, on
// whichever real server a test names: durable_child logs through `url` into
// the durable pool `pool_file` for 0.5 s (at least: until it has stored
// rows); `lock` (a statement of the test's own connection) then holds up
// what it writes for 1.5 s, and it is killed -9 (LockAt::start: `lock`
// holds it up from before it starts, for 2 s); `end_sessions` ends its
// sessions on the server, whose statements waiting for the lock would
// otherwise still run at `unlock`; `unlock` lets the server go on, and a
// logger on the same pool and URL writes what it recovered. `pool_file`
// "-": no durable pool (durable_child then runs four writers, batches of 7;
// so does the restart, which recovers nothing). Used by the MariaDB fault
// tests and the PostgreSQL sink's tests; durable_child is built beside them.
// (ChildPlan: how many records the child logs, what else to wait for, how
// long the lock holds, whether to restart at all.)
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit_row.h"
#include "auditpipe/diagnostics.h"
#include "auditpipe/logger.h"
#include "captured_warnings.h"

extern char** environ;

namespace testing_support {

struct KilledRun {
  std::set<std::int64_t> reported;  // message_ids whose commit() returned ok
  int status = 0;                   // the child's, from waitpid
  long long rows_at_kill = 0;       // rows the killed child had stored
  std::uint64_t recovered = 0;
  bool drained = false;
  std::optional<std::uint64_t> seals_pending;  // at the restart's close, with seal=
  std::set<std::int64_t> in_table;             // message_ids in audit_log afterwards
  long long missing = 0;                       // reported, not in the table
  std::string restart_warnings;                // what the restart's logger warned of
};

enum class LockAt { half_a_second_in, start };

// What else the run does: the child logs `records` and then idles until
// the kill (0: logs until then); `ready`, if given, must hold before the
// lock as well (e.g. enough seals stored); `hold` is how long the lock
// holds it up before the kill; `restart` false leaves the table as the
// kill left it, for a second killed run.
struct ChildPlan {
  std::int64_t records = 0;
  std::function<bool()> ready;
  std::chrono::milliseconds hold{1500};
  bool restart = true;
};

// durable_child started with `url`, `pool_file`, then `more` (its
// arguments after the report descriptor): its pid and the read end of its
// report pipe, or pid 0 (with a failure added) if it could not start.
inline std::pair<pid_t, int> start_durable_child(const std::string& url,
                                                 const std::string& pool_file,
                                                 const std::vector<std::string>& more) {
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {0, -1};
  }
  const std::string child = std::string(AUDITPIPE_BINARY_DIR) + "/durable_child";
  std::vector<std::string> words{child, url, pool_file, std::to_string(fds[1])};
  words.insert(words.end(), more.begin(), more.end());
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, child.c_str(), nullptr, nullptr, args.data(), environ) != 0) {
    ADD_FAILURE() << "cannot start " << child;
    ::close(fds[0]);
    ::close(fds[1]);
    return {0, -1};
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// `Probe`: the test's own client of the server (exec, scalar, rows);
// `open`: the sink for a URL.
template <class Probe, class Open>
KilledRun kill_durable_child(const std::string& url, const std::string& pool_file,
                             const std::string& lock, const std::string& unlock, Open open,
                             LockAt lock_at = LockAt::half_a_second_in,
                             const std::function<void(Probe&)>& end_sessions = {},
                             const ChildPlan& plan = {}) {
  using namespace std::chrono_literals;
  KilledRun run;
  Probe locker;
  if (lock_at == LockAt::start) locker.exec(lock);
  // (Not a structured binding: clang 14 cannot capture one.)
  const auto child = start_durable_child(url, pool_file, {std::to_string(plan.records)});
  const pid_t pid = child.first;
  const int reports = child.second;
  if (pid == 0) return run;
  std::atomic<std::size_t> commits{0};
  std::thread reader([&] {
    std::int64_t id;
    while (::read(reports, &id, sizeof id) == sizeof id) {
      run.reported.insert(id);
      commits.fetch_add(1, std::memory_order_relaxed);
    }
  });
  // At least half a second, and until the child has committed records and
  // (unless the lock holds it up from the start) stored rows: under a
  // sanitizer on a busy machine its start alone can take longer, and a
  // child killed before it stored anything proves nothing.
  const auto started = std::chrono::steady_clock::now();
  for (const auto give_up = started + 60s; std::chrono::steady_clock::now() < give_up;) {
    if (commits.load(std::memory_order_relaxed) > 0 &&
        (lock_at == LockAt::start || Probe().scalar("SELECT COUNT(*) FROM audit_log") > 0) &&
        (!plan.ready || plan.ready())) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_until(started + 500ms);
  if (lock_at == LockAt::half_a_second_in) locker.exec(lock);
  std::this_thread::sleep_for(plan.hold);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &run.status, 0);
  reader.join();
  ::close(reports);
  if (end_sessions) end_sessions(locker);
  locker.exec(unlock);
  // (Not while the lock is held: a read of a locked table may wait for it.)
  run.rows_at_kill = Probe().scalar("SELECT COUNT(*) FROM audit_log");
  if (plan.restart) {
    CapturedWarnings warnings;
    try {
      auditpipe::Options o;
      o.capacity = 20000;  // as the child had it
      o.batch_size = 500;
      if (pool_file == "-") {
        o.writers = 4;
        o.batch_size = 7;
      } else {
        o.durable_path = pool_file;
      }
      auditpipe::Logger<AuditRow> logger(open(url), o);
      const auto report = logger.close(60s);
      run.recovered = report.stats.recovered;
      run.drained = report.drained;
      if (report.stats.seals) run.seals_pending = report.stats.seals->pending;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the restart failed: " << e.what();
    }
    run.restart_warnings = warnings.text();
  }
  for (const auto& row : Probe().rows("SELECT message_id FROM audit_log"))
    run.in_table.insert(std::stoll(*row[0]));
  for (std::int64_t id : run.reported) run.missing += run.in_table.count(id) == 0;
  return run;
}

// A run killed while its seals were held up (the seals table locked): the
// restart wrote and sealed what the pool kept, nothing lost, no seal left
// pending, and it warned of nothing: the rows no seal covers were in its pool.
inline void expect_resealed(const KilledRun& run) {
  std::printf(
      "[ fault ] app killed with its seals held up: commits reported %zu, rows at the "
      "kill %lld, recovered %llu, rows %zu, lost %lld\n",
      run.reported.size(), run.rows_at_kill, static_cast<unsigned long long>(run.recovered),
      run.in_table.size(), run.missing);
  EXPECT_TRUE(WIFSIGNALED(run.status));
  EXPECT_TRUE(run.drained);
  EXPECT_GT(run.rows_at_kill, 0) << "no row was stored before the kill: the test proves nothing";
  EXPECT_GT(run.recovered, 0u);
  EXPECT_EQ(run.missing, 0);
  EXPECT_EQ(run.seals_pending, std::optional<std::uint64_t>(0));
  EXPECT_EQ(run.restart_warnings, "");
}

}  // namespace testing_support
