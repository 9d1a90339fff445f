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
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/logger.h"
#include "auditpipe/schema.h"
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

// DynamicLogger's producer path: acquire, a setter of every type (NULL
// included), commit under the thread's key and under the caller's.
TEST(HotPath, DynamicLoggerZeroAllocationsPerRecordInSteadyState) {
  using auditpipe::ColumnType;
  const auditpipe::Schema schema("dyn_hot", {{"at", ColumnType::timestamp},
                                             {"flag", ColumnType::boolean},
                                             {"i8", ColumnType::int8},
                                             {"i16", ColumnType::int16},
                                             {"i32", ColumnType::int32},
                                             {"i64", ColumnType::int64},
                                             {"u8", ColumnType::uint8},
                                             {"u16", ColumnType::uint16},
                                             {"u32", ColumnType::uint32},
                                             {"amount", ColumnType::float64, 0, true},
                                             {"sender", ColumnType::text, 32},
                                             {"payload", ColumnType::text, 128, true}});
  auto sink = std::make_shared<testing_support::CollectingSink>();
  auditpipe::Options o;
  o.capacity = 8192;
  o.batch_size = 512;
  o.max_wait = std::chrono::seconds(30);
  auditpipe::DynamicLogger logger(schema, sink, o);
  const std::string sender = "sender-with-a-name-longer-than-sso@example.org";
  const std::string payload(120, 'p');

  auto one = [&](int i) {
    auto r = logger.acquire();
    if (!r) return auditpipe::Status::dropped;
    r.set_timestamp(0, auditpipe::timestamp::now());
    r.set_bool(1, i % 2 == 0);
    r.set_integer(2, i % 100);
    r.set_integer(3, i % 30000);
    r.set_integer(4, i);
    r.set_integer(5, i);
    r.set_integer(6, i % 200);
    r.set_integer(7, i % 60000);
    r.set_integer(8, i);
    if (i % 3 == 0) {
      r.set_null(9);
    } else {
      r.set_float64(9, i * 0.5);
    }
    r.set_text(10, sender);
    r.set_text(11, payload);
    return i % 2 ? r.commit() : r.commit(1, i);
  };
  constexpr int warmup = 20000;
  constexpr int measured = 200000;
  for (int i = 0; i < warmup; ++i) ASSERT_EQ(one(i), auditpipe::Status::ok);
  const std::size_t before = auditpipe::tools::allocations_on_this_thread();
  for (int i = warmup; i < warmup + measured; ++i) ASSERT_EQ(one(i), auditpipe::Status::ok);
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
