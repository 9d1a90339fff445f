// The "auditpipe" diagnostics logger follows spdlog's registry: the global
// level, the pattern and SPDLOG_LEVEL (spdlog::cfg::load_env_levels) reach
// it whether they were set before or after it was created; a logger the
// application registered under the name is used; after drop_all() the next
// message goes to the registry's logger again. Checked on the library's own
// messages (a failed write's warning), read back from real spdlog sinks.
#include "auditpipe/diagnostics.h"

#include <gtest/gtest.h>
#include <spdlog/cfg/env.h>
#include <spdlog/cfg/helpers.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

#include "audit_row.h"
#include "auditpipe/logger.h"
#include "collecting_sink.h"

namespace {

using testing_support::AuditRow;
using testing_support::CollectingSink;

// Each test starts with no "auditpipe" logger and spdlog's defaults, and
// leaves them so.
class Diagnostics : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    ::unsetenv("SPDLOG_LEVEL");
    spdlog::cfg::helpers::load_levels("info");  // forgets per-logger levels loaded before
    auditpipe::set_diagnostics_logger(nullptr);
    spdlog::drop_all();
    spdlog::set_level(spdlog::level::info);
    spdlog::set_pattern("%+");
  }
};

// Makes the library report on itself: one failed write, retried, which the
// writer logs as a warning ("... failed (attempt 1) ...").
void log_a_failed_write() {
  auto sink = std::make_shared<CollectingSink>();
  sink->fail_next(1);
  auditpipe::Options o;
  o.retry_backoff_initial = std::chrono::milliseconds(1);
  o.retry_backoff_max = std::chrono::milliseconds(1);
  auditpipe::Logger<AuditRow> logger(sink, o);
  ASSERT_EQ(logger.acquire().commit(), auditpipe::Status::ok);
  ASSERT_EQ(logger.close().stats.written, 1u);
}

constexpr const char* failure_text = "failed (attempt 1)";

bool any_line_has(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

// A ring buffer added to the registry's "auditpipe" logger, formatted by the
// pattern set later.
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> capture_diagnostics() {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auditpipe::diagnostics()->sinks().push_back(ring);
  return ring;
}

TEST_F(Diagnostics, TheLoggerIsInSpdlogsRegistry) {
  EXPECT_EQ(spdlog::get("auditpipe"), nullptr);
  const auto logger = auditpipe::diagnostics();
  EXPECT_EQ(spdlog::get("auditpipe"), logger);
  EXPECT_EQ(auditpipe::diagnostics(), logger);  // the same one each time
}

TEST_F(Diagnostics, SetLevelBeforeTheLoggerExistsApplies) {
  spdlog::set_level(spdlog::level::debug);
  EXPECT_EQ(auditpipe::diagnostics()->level(), spdlog::level::debug);
  spdlog::set_level(spdlog::level::err);
  auditpipe::set_diagnostics_logger(nullptr);
  spdlog::drop_all();
  const auto ring = capture_diagnostics();  // created at level err
  EXPECT_EQ(auditpipe::diagnostics()->level(), spdlog::level::err);
  log_a_failed_write();
  EXPECT_FALSE(any_line_has(ring->last_formatted(), failure_text));  // a warning, below err
}

TEST_F(Diagnostics, SetLevelAfterTheLoggerExistsApplies) {
  const auto ring = capture_diagnostics();
  log_a_failed_write();
  ASSERT_TRUE(any_line_has(ring->last_formatted(), failure_text));  // shown at the default
  const auto before = ring->last_formatted().size();
  spdlog::set_level(spdlog::level::err);
  log_a_failed_write();
  EXPECT_EQ(ring->last_formatted().size(), before);
  spdlog::set_level(spdlog::level::warn);
  log_a_failed_write();
  EXPECT_GT(ring->last_formatted().size(), before);
}

TEST_F(Diagnostics, SetPatternAfterTheLoggerExistsApplies) {
  const auto ring = capture_diagnostics();
  spdlog::set_pattern("<%n|%l> %v");
  log_a_failed_write();
  EXPECT_TRUE(any_line_has(ring->last_formatted(), "<auditpipe|warning> auditpipe: writer 0:"))
      << (ring->last_formatted().empty() ? "" : ring->last_formatted().back());
}

// Before the logger exists there is nothing to add a ring buffer to: the
// library's own sink (stderr) shows the pattern it was created with.
TEST_F(Diagnostics, SetPatternBeforeTheLoggerExistsApplies) {
  spdlog::set_pattern("<%n|%l> %v");
  ::testing::internal::CaptureStderr();
  log_a_failed_write();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("<auditpipe|warning> auditpipe: writer 0:"), std::string::npos) << err;
}

TEST_F(Diagnostics, SpdlogLevelFromTheEnvironmentApplies) {
  // Before: loaded while no "auditpipe" logger exists.
  ::setenv("SPDLOG_LEVEL", "info,auditpipe=off", 1);
  spdlog::cfg::load_env_levels();
  const auto ring = capture_diagnostics();
  EXPECT_EQ(auditpipe::diagnostics()->level(), spdlog::level::off);
  log_a_failed_write();
  EXPECT_FALSE(any_line_has(ring->last_formatted(), failure_text));
  // After: loaded again with the logger in place.
  ::setenv("SPDLOG_LEVEL", "auditpipe=warn", 1);
  spdlog::cfg::load_env_levels();
  EXPECT_EQ(auditpipe::diagnostics()->level(), spdlog::level::warn);
  log_a_failed_write();
  EXPECT_TRUE(any_line_has(ring->last_formatted(), failure_text));
}

TEST_F(Diagnostics, ALoggerTheApplicationRegisteredIsUsed) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto mine = std::make_shared<spdlog::logger>("auditpipe", ring);
  spdlog::register_logger(mine);
  EXPECT_EQ(auditpipe::diagnostics(), mine);
  log_a_failed_write();
  EXPECT_TRUE(any_line_has(ring->last_formatted(), failure_text));
}

TEST_F(Diagnostics, AfterDropAllTheRegistrysSettingsStillReachIt) {
  const auto first = auditpipe::diagnostics();
  spdlog::drop_all();
  spdlog::set_level(spdlog::level::err);
  const auto ring = capture_diagnostics();
  const auto second = auditpipe::diagnostics();
  EXPECT_NE(second, first);
  EXPECT_EQ(spdlog::get("auditpipe"), second);
  log_a_failed_write();
  EXPECT_FALSE(any_line_has(ring->last_formatted(), failure_text));
  // And one the application registers after drop_all() takes over.
  spdlog::drop_all();
  auto theirs = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  spdlog::register_logger(std::make_shared<spdlog::logger>("auditpipe", theirs));
  log_a_failed_write();
  EXPECT_TRUE(any_line_has(theirs->last_formatted(), failure_text));
}

TEST_F(Diagnostics, AChosenLoggerBypassesTheRegistryUntilReset) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auditpipe::set_diagnostics_logger(std::make_shared<spdlog::logger>("mine", ring));
  log_a_failed_write();
  EXPECT_TRUE(any_line_has(ring->last_formatted(), failure_text));
  auditpipe::set_diagnostics_logger(nullptr);
  const auto now = auditpipe::diagnostics();
  EXPECT_EQ(now, spdlog::get("auditpipe"));
  EXPECT_EQ(now->name(), "auditpipe");
}

}  // namespace
