// The lock discipline is checked by the compiler: with clang's
// -Wthread-safety, touching a member guarded by a detail::Mutex without
// holding it does not compile. (The clang build in scripts/test.sh relies on
// this; if this file compiled, that build would prove nothing.)
// expect: requires holding mutex 'mutex_'
#include "auditpipe/detail/thread_annotations.h"

class Counter {
 public:
  void bump() { ++value_; }

 private:
  auditpipe::detail::Mutex mutex_;
  int value_ AUDITPIPE_GUARDED_BY(mutex_) = 0;
};

int main() {
  Counter c;
  c.bump();
}
