// The hot path (acquire, fill, commit, and log() through a mapping) makes no
// heap allocation in steady state. Counted with a replaced global operator
// new (tools/alloc_counter), per thread, so the writer thread's own work
// does not count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"

namespace app {
struct Message {
  std::int64_t id = 0;
  std::string from;
  std::string to;
  std::string body;
  std::int32_t status = 0;
};
constexpr auto map_fields(auditpipe::type_tag<Message>,
                          auditpipe::type_tag<testing_support::AuditRow>) {
  using testing_support::AuditRow;
  return auditpipe::mapping(auditpipe::stamp_now(&AuditRow::at),
                            auditpipe::field(&Message::id, &AuditRow::message_id),
                            auditpipe::field(&Message::from, &AuditRow::sender),
                            auditpipe::field(&Message::to, &AuditRow::receiver),
                            auditpipe::field(&Message::body, &AuditRow::payload),
                            auditpipe::field(&Message::status, &AuditRow::status));
}
}  // namespace app

namespace {

using testing_support::AuditRow;

TEST(HotPath, ZeroAllocationsPerRecordInSteadyState) {
  auto sink = std::make_shared<testing_support::CollectingSink>();
  auditpipe::Options o;
  o.capacity = 8192;
  o.batch_size = 512;
  o.max_wait = std::chrono::seconds(30);
  auditpipe::Logger<AuditRow> logger(sink, o);

  app::Message m;
  m.from = "sender-with-a-name-longer-than-sso@example.org";
  m.to = "receiver@example.org";
  m.body = std::string(120, 'p');

  constexpr int warmup = 20000;
  constexpr int measured = 200000;
  for (int i = 0; i < warmup; ++i) {
    m.id = i;
    ASSERT_EQ(logger.log(m), auditpipe::Status::ok);
  }
  const std::size_t before = auditpipe::tools::allocations_on_this_thread();
  for (int i = 0; i < measured; ++i) {
    m.id = warmup + i;
    if (i % 2 == 0) {
      ASSERT_EQ(logger.log(m), auditpipe::Status::ok);
    } else {
      auto r = logger.acquire();
      ASSERT_TRUE(r);
      r->message_id = i;
      r->sender = m.from;
      r->payload = m.body;
      ASSERT_EQ(r.commit(), auditpipe::Status::ok);
    }
  }
  const std::size_t during = auditpipe::tools::allocations_on_this_thread() - before;
  EXPECT_EQ(during, 0u) << "allocations per record: " << static_cast<double>(during) / measured;
  const auto report = logger.close();
  EXPECT_EQ(report.stats.written, static_cast<std::uint64_t>(warmup + measured));
}

// The counter works: a std::string beyond the small-string buffer allocates.
TEST(HotPath, TheCounterSeesAllocations) {
  const std::size_t before = auditpipe::tools::allocations_on_this_thread();
  std::string s(1000, 'x');
  EXPECT_GT(auditpipe::tools::allocations_on_this_thread() - before, 0u);
  EXPECT_EQ(s.size(), 1000u);
}

}  // namespace
