// spdlog both ways: spdlog messages landing as audit records (through the
// pipeline, following its overflow policy, never deadlocking on auditpipe's
// own diagnostics), records written as lines through a spdlog logger, and
// the diagnostics logger itself.
#include <gtest/gtest.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "audit_row.h"
#include "auditpipe/diagnostics.h"
#include "auditpipe/logger.h"
#include "auditpipe/spdlog/from_spdlog.h"
#include "auditpipe/spdlog/line_sink.h"
#include "collecting_sink.h"
#include "eventually.h"
#include "null_row.h"
#include "temp_dir.h"
#include "wait_slack.h"

namespace {

using auditpipe::Status;
using auditpipe::spdlog_bridge::LogRecord;
using testing_support::CollectingSink;

const LogRecord& as_record(const std::vector<std::byte>& bytes) {
  return *reinterpret_cast<const LogRecord*>(bytes.data());
}

TEST(SpdlogBridge, SpdlogMessagesBecomeAuditRecords) {
  auto sink = std::make_shared<CollectingSink>();
  sink->keep_bytes();
  auto audit = std::make_shared<auditpipe::Logger<LogRecord>>(sink);
  auto to_audit = std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit);
  auto logger = std::make_shared<spdlog::logger>("payments", to_audit);
  logger->set_level(spdlog::level::trace);

  logger->info("payment {} accepted", 1001);
  SPDLOG_LOGGER_WARN(logger, "refund {} over the limit", 1002);
  logger->error("{}", std::string(3000, 'x'));  // longer than the 1000-byte column
  logger->flush();

  const auto report = audit->close();
  ASSERT_EQ(sink->rows().size(), 3u);
  EXPECT_EQ(to_audit->committed(), 3u);
  EXPECT_EQ(report.stats.truncated_fields, 1u);
  const auto rows = sink->rows();
  const LogRecord& info = as_record(rows[0]);
  EXPECT_EQ(info.level.view(), "info");
  EXPECT_EQ(info.logger.view(), "payments");
  EXPECT_EQ(info.message.view(), "payment 1001 accepted");
  EXPECT_NE(info.thread_id, 0);
  EXPECT_GT(info.at.micros, 0);
  EXPECT_TRUE(info.source_file.empty());
  const LogRecord& warn = as_record(rows[1]);
  EXPECT_EQ(warn.level.view(), "warning");
  EXPECT_NE(warn.source_file.view().find("spdlog_bridge_test.cpp"), std::string_view::npos);
  EXPECT_GT(warn.source_line, 0);
  EXPECT_EQ(as_record(rows[2]).message.size(), 1000u);
}

TEST(SpdlogBridge, AFullPoolFollowsTheOverflowPolicyWithoutBlockingSpdlog) {
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();  // the database is stalled
  auditpipe::Options o;
  o.capacity = 16;
  o.batch_size = 8;
  o.overflow = auditpipe::Overflow::drop;
  auto audit = std::make_shared<auditpipe::Logger<LogRecord>>(sink, o);
  auto to_audit = std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit);
  auto logger = std::make_shared<spdlog::logger>("busy", to_audit);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) logger->info("message {}", i);
    });
  }
  for (auto& t : threads) t.join();  // returns: nothing waited on the stalled database
  EXPECT_EQ(to_audit->committed() + to_audit->not_committed(), 1000u);
  EXPECT_EQ(to_audit->committed(), 16u);
  EXPECT_EQ(audit->stats().dropped, to_audit->not_committed());
  sink->release();
  EXPECT_EQ(audit->close().stats.written, 16u);
}

// auditpipe's diagnostics routed into the very from_spdlog_mt sink that
// feeds its pipeline, with a fallback for the messages kept out of it;
// `previous` is the diagnostics logger to put back.
struct LoopedDiagnostics {
  LoopedDiagnostics(std::shared_ptr<auditpipe::Sink> sink, const auditpipe::Options& o)
      : audit(std::make_shared<auditpipe::Logger<LogRecord>>(std::move(sink), o)),
        fallback(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)),
        to_audit(std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit, fallback)),
        logger(std::make_shared<spdlog::logger>("everything", to_audit)),
        previous(auditpipe::diagnostics()) {
    auditpipe::set_diagnostics_logger(logger);
  }
  std::shared_ptr<auditpipe::Logger<LogRecord>> audit;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> fallback;
  std::shared_ptr<auditpipe::spdlog_bridge::from_spdlog_mt> to_audit;
  std::shared_ptr<spdlog::logger> logger;
  std::shared_ptr<spdlog::logger> previous;
};

// auditpipe's own diagnostics routed into the very sink that feeds it: the
// writer reports failures from its thread, and those reports must neither
// loop into the pipeline nor deadlock with producers holding spdlog's lock.
TEST(SpdlogBridge, AuditpipesOwnDiagnosticsDoNotLoopBack) {
  auto sink = std::make_shared<CollectingSink>();
  sink->fail_next(5);  // the writer will log warnings about these
  auditpipe::Options o;
  o.capacity = 8;
  o.batch_size = 4;
  // Long enough that a slow (sanitized) writer never times a producer out;
  // a deadlock would still show, as records that waited it out.
  o.max_wait = std::chrono::seconds(5);
  o.retry_backoff_initial = std::chrono::milliseconds(1);
  o.retry_backoff_max = std::chrono::milliseconds(2);
  LoopedDiagnostics looped(sink, o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) looped.logger->info("application message {}", i);
    });
  }
  for (auto& t : threads) t.join();
  looped.logger->flush();
  auditpipe::set_diagnostics_logger(looped.previous);
  const auto report = looped.audit->close();
  EXPECT_GT(looped.to_audit->internal_messages(), 0u);  // the writer's warnings were kept out...
  EXPECT_FALSE(looped.fallback->last_formatted().empty());  // ...and went to the fallback
  // Nobody waited out max_wait: the writer never queued behind a producer
  // that was waiting for the writer.
  EXPECT_EQ(looped.to_audit->not_committed(), 0u);
  EXPECT_EQ(looped.to_audit->committed(), 300u);
  EXPECT_EQ(report.stats.written, 300u);
  for (const auto& row : sink->rows()) {
    EXPECT_EQ(std::string(as_record(row).message.view()).find("auditpipe:"), std::string::npos);
  }
}

// The same, for a diagnostic made on the producer's own thread, inside the
// sink's commit: a spill directory at its cap is reported by the commit
// that found it full. The sink's lock, held by that very thread, was taken
// again: the application hung (a new user's program, 4 threads).
TEST(SpdlogBridge, ADiagnosticFromInsideTheSinksOwnCommitDoesNotHang) {
  testing_support::TempDir dir;
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();  // nothing is written: the pool fills, then the spill directory
  auditpipe::Options o;
  o.capacity = 16;
  o.batch_size = 8;
  o.overflow = auditpipe::Overflow::spill;
  o.spill_path = dir.path() / "spill";
  o.spill_max_bytes = 20000;
  o.spill_segment_bytes = 10000;
  o.max_wait = std::chrono::milliseconds(20);
  LoopedDiagnostics looped(sink, o);
  auto producers = std::async(std::launch::async, [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 60; ++i) looped.logger->info("application message {}", i);
      });
    }
    for (auto& t : threads) t.join();
  });
  if (producers.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "the producers hung in the sink's lock\n");
    std::abort();  // they cannot be joined
  }
  auditpipe::set_diagnostics_logger(looped.previous);
  EXPECT_GT(looped.to_audit->internal_messages(),
            0u);  // the "cannot spill" reports were kept out...
  bool reported = false;
  for (const auto& line : looped.fallback->last_formatted()) {
    reported = reported || line.find("spill") != std::string::npos;
  }
  EXPECT_TRUE(reported) << "...and went to the fallback";
  EXPECT_EQ(looped.to_audit->committed() + looped.to_audit->not_committed(), 240u);
  EXPECT_GT(looped.to_audit->not_committed(), 0u);  // the spill directory was full
  sink->release();
  const auto report = looped.audit->close(std::chrono::seconds(30));
  EXPECT_EQ(report.stats.written + report.stats.replayed + report.on_disk,
            looped.to_audit->committed());
}

// Threads that find the pool full wait for it side by side, each at most
// max_wait: the sink held spdlog's base_sink lock across the wait, so the
// 4th caller waited out three others' max_wait before its own (a trial:
// 3.5 s with max_wait 500 ms).
TEST(SpdlogBridge, ThreadsWaitForThePoolSideBySideNotInTurn) {
  auto sink = std::make_shared<CollectingSink>();
  sink->hold();  // the database is stalled
  auditpipe::Options o;
  o.capacity = 16;
  o.batch_size = 8;
  o.max_wait = std::chrono::milliseconds(300);
  auto audit = std::make_shared<auditpipe::Logger<LogRecord>>(sink, o);
  auto to_audit = std::make_shared<auditpipe::spdlog_bridge::from_spdlog_mt>(audit);
  auto logger = std::make_shared<spdlog::logger>("stalled", to_audit);
  for (int i = 0; i < 16; ++i) logger->info("filling {}", i);
  ASSERT_EQ(to_audit->committed(), 16u);
  std::vector<std::chrono::steady_clock::duration> took(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const auto start = std::chrono::steady_clock::now();
      logger->info("waiting {}", t);
      took[static_cast<std::size_t>(t)] = std::chrono::steady_clock::now() - start;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(to_audit->not_committed(), 4u);  // each timed out at max_wait
  // In turn, the last would have waited 4 x 300 ms; side by side each
  // waits its own 300 ms (and the wake-up).
  for (const auto d : took) {
    EXPECT_LT(d, o.max_wait + o.max_wait / 2 + testing_support::wait_slack())
        << std::chrono::duration_cast<std::chrono::milliseconds>(d).count() << " ms";
  }
  sink->release();
  EXPECT_EQ(audit->close().stats.written, 16u);
}

TEST(SpdlogBridge, TheSingleThreadedSinkWorks) {
  auto sink = std::make_shared<CollectingSink>();
  auto audit = std::make_shared<auditpipe::Logger<LogRecord>>(sink);
  auto logger = std::make_shared<spdlog::logger>(
      "single", std::make_shared<auditpipe::spdlog_bridge::from_spdlog_st>(audit));
  for (int i = 0; i < 10; ++i) logger->info("{}", i);
  EXPECT_EQ(audit->close().stats.written, 10u);
}

TEST(SpdlogBridge, RecordsAsLinesThroughASpdlogLogger) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto lines = std::make_shared<spdlog::logger>("audit-lines", ring);
  lines->set_pattern("%v");
  auditpipe::Options o;
  o.source_id_base = 500;
  {
    auditpipe::Logger<testing_support::AuditRow> logger(
        auditpipe::spdlog_bridge::make_line_sink(lines), o);
    auto r = logger.acquire();
    r->message_id = 42;
    r->at = auditpipe::timestamp{1'700'000'000'123'456};
    r->delivered = true;
    r->sender = "quote \" back\\slash\nnewline";
    ASSERT_EQ(r.commit(), Status::ok);
    EXPECT_EQ(logger.close().stats.written, 1u);
  }
  const auto out = ring->last_formatted();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(
      out[0].find("audit_log source_id=500 seq=0 at=2023-11-14T22:13:20.123456Z message_id=42"),
      std::string::npos)
      << out[0];
  EXPECT_NE(out[0].find(R"(sender="quote \" back\\slash\nnewline")"), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("delivered=true"), std::string::npos) << out[0];
}

// A line its file cannot take (a full disk: /dev/full) fails the batch,
// kept and retried; spdlog's logger caught the sink's error, printed it,
// and every record was counted as written.
TEST(SpdlogBridge, ALineTheFileCannotTakeIsNotCountedWritten) {
  auto full = std::make_shared<spdlog::logger>(
      "full-disk", std::make_shared<spdlog::sinks::basic_file_sink_mt>("/dev/full"));
  auditpipe::Options o;
  o.retry_backoff_initial = std::chrono::milliseconds(10);
  o.retry_backoff_max = std::chrono::milliseconds(50);
  auditpipe::Logger<testing_support::AuditRow> logger(
      auditpipe::spdlog_bridge::make_line_sink(full), o);
  for (int i = 0; i < 20; ++i) {
    auto r = logger.acquire();
    ASSERT_TRUE(r);
    r->message_id = i;
    ASSERT_EQ(r.commit(), Status::ok);
  }
  EXPECT_TRUE(testing_support::eventually([&] { return logger.stats().write_failures >= 2; }));
  const auto report = logger.close(std::chrono::milliseconds(200));
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.stats.written, 0u);
  EXPECT_EQ(report.unwritten, 20u);
  EXPECT_NE(report.stats.health_reason.find("No space left on device"), std::string::npos)
      << report.stats.health_reason;
}

// An empty nullable member is `null`, not the zero value: a line said
// amount=0 note="" for both NULL and a real 0 and "" (README, Nullable
// columns: an empty string and 0 stay values).
TEST(SpdlogBridge, LinesTellNullFromZeroAndEmpty) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto lines = std::make_shared<spdlog::logger>("null-lines", ring);
  lines->set_pattern("%v");
  {
    auditpipe::Logger<testing_support::NullRow> logger(
        auditpipe::spdlog_bridge::make_line_sink(lines));
    for (std::int64_t id = 0; id < 2; ++id) {
      auto r = logger.acquire();
      r->message_id = id;
      if (id == 1) {
        r->amount = 0.0;
        r->note = "";
        r->flag = false;
        r->i32 = 0;
      }
      ASSERT_EQ(r.commit(), Status::ok);
    }
    EXPECT_EQ(logger.close().stats.written, 2u);
  }
  const auto out = ring->last_formatted();
  ASSERT_EQ(out.size(), 2u);
  for (const char* field : {" i32=null ", " flag=null ", " amount=null ", " note=null "})
    EXPECT_NE(out[0].find(field), std::string::npos) << field << " in " << out[0];
  for (const char* field : {" i32=0 ", " flag=false ", " amount=0 ", " note=\"\" "})
    EXPECT_NE(out[1].find(field), std::string::npos) << field << " in " << out[1];
}

TEST(SpdlogBridge, TheDiagnosticsLoggerCanBeReplacedAndSilenced) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto previous = auditpipe::diagnostics();
  auditpipe::set_diagnostics_logger(std::make_shared<spdlog::logger>("mine", ring));
  {
    auto sink = std::make_shared<CollectingSink>();
    sink->refuse_if([](const auditpipe::RecordRef& r) { return r.seq == 0; });
    auditpipe::Logger<testing_support::AuditRow> logger(sink);
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    logger.close();
  }
  EXPECT_FALSE(ring->last_formatted().empty());  // the refusal was reported here
  auditpipe::diagnostics()->set_level(spdlog::level::off);
  const auto before = ring->last_formatted().size();
  {
    auto sink = std::make_shared<CollectingSink>();
    sink->refuse_if([](const auditpipe::RecordRef&) { return true; });
    auditpipe::Logger<testing_support::AuditRow> logger(sink);
    ASSERT_EQ(logger.acquire().commit(), Status::ok);
    logger.close();
  }
  EXPECT_EQ(ring->last_formatted().size(), before);
  auditpipe::set_diagnostics_logger(previous);
}

}  // namespace
