// Whether a multi-threaded fork() can be tested in this build: the
// sanitizers' allocators, held by another thread at the fork, hang the
// child's first malloc (seen under ASan: libpq's connect in the child),
// where glibc's malloc is made safe across fork(). Tests that fork a
// process with running writers skip under them.
#pragma once

namespace testing_support {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AUDITPIPE_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(AUDITPIPE_TEST_SANITIZED)
inline constexpr bool multithreaded_fork_testable = false;
#else
inline constexpr bool multithreaded_fork_testable = true;
#endif

inline constexpr const char* multithreaded_fork_skipped =
    "the sanitizers' runtimes do not survive a multi-threaded fork()";

}  // namespace testing_support
