// log_rows: the benchmarks' producers. Rows 0..rows-1 go through `logger`
// from `producers` threads (thread p takes rows p, p + producers, ...),
// each record filled by fill(record, i); a record the pool has no room for
// (an empty handle) is skipped.
#pragma once

#include <auditpipe/auditpipe.h>

#include <thread>
#include <vector>

namespace bench {

template <class Record, class Fill>
void log_rows(auditpipe::Logger<Record>& logger, long long rows, int producers, Fill fill) {
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (long long i = p; i < rows; i += producers) {
        auto h = logger.acquire();
        if (!h) continue;
        fill(*h, i);
        (void)h.commit();
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace bench
