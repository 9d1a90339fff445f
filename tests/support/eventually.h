// eventually(pred): polls `pred` until it holds or a generous limit passes,
// for conditions that background threads bring about (a housekeeper closing
// idle connections, a writer draining). Tests assert the outcome, not the
// time it took.
#pragma once

#include <chrono>
#include <thread>

namespace testing_support {

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace testing_support
