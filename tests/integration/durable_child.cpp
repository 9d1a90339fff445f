// durable_child: the process the "app killed" fault tests kill
// (tests/support/killed_durable_child.h).
//
//   durable_child <url> <pool-file> <report-fd> [records [spill-dir first-id]]
//
// Logs records from four threads into a durable pool until it is killed.
// With <pool-file> "-": no durable pool, and four writers storing batches
// of 7 (what a crash of several writers sealing small batches leaves).
// After each commit() that returned ok it writes the record's message_id
// (8 bytes) to <report-fd>, unbuffered: everything reported was committed
// before the kill, so it must be in the table after recovery. [records]
// other than 0: that many are logged, and then the process idles until the
// kill (a run whose seals are all stored, killed while it is still up).
// [spill-dir]: a pool of 4096 whose overflow spills there (Overflow::spill),
// the message_ids counted from [first-id], for a test that kills several
// runs on one pool file and spill directory.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "auditpipe/open.h"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5 && argc != 7) {
    std::fprintf(stderr,
                 "usage: durable_child <url> <pool-file> <report-fd> [records [spill-dir "
                 "first-id]]\n");
    return 2;
  }
  const int report = std::atoi(argv[3]);
  const std::int64_t records = argc >= 5 ? std::atoll(argv[4]) : 0;
  const std::int64_t first_id = argc == 7 ? std::atoll(argv[6]) : 0;
  auditpipe::Options o;
  o.capacity = 20000;
  o.batch_size = 500;
  if (std::string(argv[2]) == "-") {
    o.writers = 4;
    o.batch_size = 7;
  } else {
    o.durable_path = argv[2];
  }
  o.max_wait = std::chrono::seconds(60);
  if (argc == 7) {
    o.capacity = 4096;
    o.overflow = auditpipe::Overflow::spill;
    o.spill_path = argv[5];
    o.spill_segment_bytes = 1 << 20;
  }
  try {
    auditpipe::Logger<testing_support::AuditRow> logger(auditpipe::open(argv[1]), o);
    std::atomic<std::int64_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        while (true) {
          const std::int64_t id = next.fetch_add(1);
          if (records > 0 && id >= records) {
            std::this_thread::sleep_for(std::chrono::hours(1));
            continue;
          }
          auto r = logger.acquire();
          if (!r) continue;
          r->message_id = first_id + id;
          r->payload = "committed before the kill";
          if (r.commit() == auditpipe::Status::ok) {
            const std::int64_t reported = first_id + id;
            if (::write(report, &reported, sizeof reported) != sizeof reported) std::_Exit(3);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "durable_child: %s\n", e.what());
    return 1;
  }
}
