// wait_slack(): how far past its deadline a wait may be seen to end. The
// library's own bound is max_wait + the wake-up. On an idle machine that
// wake-up is well under 1 ms (bench/stall: 0.28 ms), but a test's own 16
// producers, or another test beside it under ctest -j2, can keep a woken
// waiter off both cores for a few ms (seen: 2.3 ms under ctest -j2 alone,
// 7.9 ms with other builds sharing the cores, 14.9 ms in the test command
// with its Galera cluster and standby running beside the servers): 18 ms in
// the Release run, still under the extra max_wait a wait that ignored its
// deadline would add (the shortest max_wait checked this way is 20 ms). Sanitizer
// builds run 5-20x slower on the same two cores, so scripts/test.sh gives
// them more (AUDITPIPE_TEST_WAIT_SLACK_MS: 100 ms; 50 was once exceeded by
// 28 ms under ASan in the test command, a wait whose deadline was 110 ms).
// Their bounds are looser for it: there a wait that ignored a max_wait
// shorter than the slack (20 ms in some tests) cannot be told from noise;
// the Release run, with 18 ms, is the one that catches it.
#pragma once

#include <chrono>
#include <cstdlib>

namespace testing_support {

inline std::chrono::nanoseconds wait_slack() {
  const char* ms = std::getenv("AUDITPIPE_TEST_WAIT_SLACK_MS");
  return std::chrono::milliseconds(ms != nullptr ? std::atoi(ms) : 18);
}

}  // namespace testing_support
