#include "auditpipe/mapping.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "audit_row.h"

namespace app {

enum class Outcome : std::int32_t { delivered = 3, bounced = 9 };

// A caller's own message type: std::string fields, an enum, a time point.
struct SubMessage {
  std::int64_t id = 0;
  std::string from;
  std::string to;
  Outcome outcome = Outcome::delivered;
  std::uint16_t channel = 0;
  double latency_ms = 0;
  bool ok = false;
  std::string body;
  std::chrono::system_clock::time_point sent_at;
};

constexpr auto map_fields(auditpipe::type_tag<SubMessage>,
                          auditpipe::type_tag<testing_support::AuditRow>) {
  using testing_support::AuditRow;
  return auditpipe::mapping(auditpipe::field(&SubMessage::sent_at, &AuditRow::at),
                            auditpipe::field(&SubMessage::id, &AuditRow::message_id),
                            auditpipe::field(&SubMessage::outcome, &AuditRow::status),
                            auditpipe::field(&SubMessage::channel, &AuditRow::channel),
                            auditpipe::field(&SubMessage::latency_ms, &AuditRow::latency_ms),
                            auditpipe::field(&SubMessage::ok, &AuditRow::delivered),
                            auditpipe::field(&SubMessage::from, &AuditRow::sender),
                            auditpipe::field(&SubMessage::to, &AuditRow::receiver),
                            auditpipe::field(&SubMessage::body, &AuditRow::payload));
}

}  // namespace app

namespace {

using testing_support::AuditRow;

TEST(Mapping, CopiesEveryField) {
  app::SubMessage m;
  m.id = 123456789012;
  m.from = "alice@example.org";
  m.to = "bob@example.org";
  m.outcome = app::Outcome::bounced;
  m.channel = 4;
  m.latency_ms = 12.75;
  m.ok = true;
  m.body = std::string(200, 'x');  // longer than the 128-byte column
  m.sent_at =
      std::chrono::system_clock::time_point{std::chrono::microseconds{1'700'000'000'000'001}};

  AuditRow row;
  auditpipe::mapping_of<app::SubMessage, AuditRow>.apply(m, row);
  EXPECT_EQ(row.at.micros, 1'700'000'000'000'001);
  EXPECT_EQ(row.message_id, 123456789012);
  EXPECT_EQ(row.status, 9);
  EXPECT_EQ(row.channel, 4);
  EXPECT_EQ(row.latency_ms, 12.75);
  EXPECT_TRUE(row.delivered);
  EXPECT_EQ(row.sender.view(), "alice@example.org");
  EXPECT_EQ(row.receiver.view(), "bob@example.org");
  EXPECT_EQ(row.payload.view(), std::string(128, 'x'));
  EXPECT_TRUE(row.payload.truncated());
  EXPECT_FALSE(row.sender.truncated());
}

TEST(Mapping, ComputedAndStampedFields) {
  struct Event {
    int code;
  };
  const auto before = auditpipe::timestamp::now();
  constexpr auto map = auditpipe::mapping(
      auditpipe::compute(&AuditRow::status, [](const Event& e) { return e.code * 2; }),
      auditpipe::compute(&AuditRow::sender,
                         [](const Event& e) { return e.code > 0 ? "positive" : "other"; }),
      auditpipe::stamp_now(&AuditRow::at));
  AuditRow row;
  map.apply(Event{21}, row);
  EXPECT_EQ(row.status, 42);
  EXPECT_EQ(row.sender.view(), "positive");
  // stamp_now() may leave a cycle count for the writer to convert.
  EXPECT_GE(row.at.resolved(), before);
  EXPECT_LE(row.at.resolved(), auditpipe::timestamp::now());
}

TEST(Mapping, IsDeclaredForTheMessageType) {
  static_assert(auditpipe::mapped<app::SubMessage, AuditRow>);
  static_assert(!auditpipe::mapped<int, AuditRow>);
  SUCCEED();
}

}  // namespace

namespace {

TEST(Timestamp, FastReadingsResolveToWallTime) {
  for (int i = 0; i < 1000; ++i) {
    const auto before = auditpipe::timestamp::now();
    const auto fast = auditpipe::timestamp::fast_now();
    const auto after = auditpipe::timestamp::now();
    const auto wall = fast.resolved();
    EXPECT_FALSE(wall.pending());
    // Generous bounds: the conversion's error is microseconds.
    EXPECT_GE(wall.micros, before.micros - 1000);
    EXPECT_LE(wall.micros, after.micros + 1000);
  }
  const auditpipe::timestamp plain{1'700'000'000'000'000};
  EXPECT_FALSE(plain.pending());
  EXPECT_EQ(plain.resolved(), plain);
  EXPECT_FALSE(auditpipe::timestamp{-1}.pending());  // before 1970 is still a time
}

TEST(Timestamp, CivilTimeAndFormat) {
  const auditpipe::timestamp t{1'700'000'000'123'456};
  const auto c = t.civil();
  EXPECT_EQ(c.year, 2023);
  EXPECT_EQ(c.month, 11u);
  EXPECT_EQ(c.day, 14u);
  EXPECT_EQ(c.hour, 22u);
  EXPECT_EQ(c.minute, 13u);
  EXPECT_EQ(c.second, 20u);
  EXPECT_EQ(c.microsecond, 123456u);
  char buf[32];
  EXPECT_EQ(std::string(buf, t.format(buf, 'T')), "2023-11-14T22:13:20.123456");
  EXPECT_EQ(auditpipe::timestamp{-1}.civil().year, 1969);
}

// Every value is written exactly: years past 9999 whole, negative years
// with a sign (astronomical numbering), never clamped to 0000.
TEST(Timestamp, FormatWritesEveryYearExactly) {
  auto text = [](std::int64_t micros) {
    char buf[auditpipe::timestamp::max_format_size];
    return std::string(buf, auditpipe::timestamp{micros}.format(buf));
  };
  EXPECT_EQ(text(INT64_MAX), "294247-01-10 04:00:54.775807");
  EXPECT_EQ(text(INT64_MIN), "-290308-12-21 19:59:05.224192");
  EXPECT_EQ(text(-62'167'219'200'000'000), "0000-01-01 00:00:00.000000");
  EXPECT_EQ(text(-62'167'219'200'000'001), "-0001-12-31 23:59:59.999999");
  EXPECT_EQ(text(253'402'300'800'000'000), "10000-01-01 00:00:00.000000");
  EXPECT_EQ(text(INT64_MIN).size(), auditpipe::timestamp::max_format_size);
}

}  // namespace

namespace {

// A message of C strings, as a C API hands them out: any may be null.
struct CMessage {
  const char* from = nullptr;
  char* to = nullptr;
  const char* body = nullptr;
};

TEST(Mapping, NullCStringsBecomeEmptyMarkedFieldsNotACrash) {
  constexpr auto m = auditpipe::mapping(auditpipe::field(&CMessage::from, &AuditRow::sender),
                                        auditpipe::field(&CMessage::to, &AuditRow::receiver),
                                        auditpipe::field(&CMessage::body, &AuditRow::payload));
  char to[] = "bob";
  const CMessage msg{nullptr, to, "hello"};
  AuditRow row;
  row.sender = "stale";
  m.apply(msg, row);
  EXPECT_TRUE(row.sender.empty());
  EXPECT_EQ(auditpipe::read_text_flags(reinterpret_cast<const std::byte*>(&row),
                                       auditpipe::descriptor_of<AuditRow>().columns[6]) &
                auditpipe::text_flags::from_null,
            auditpipe::text_flags::from_null);
  EXPECT_EQ(row.receiver, "bob");
  EXPECT_EQ(row.payload, "hello");
  // Filled by hand, the same.
  row.payload = static_cast<const char*>(nullptr);
  EXPECT_TRUE(row.payload.empty());
  row.payload = "again";  // a real string clears the mark
  EXPECT_EQ(row.payload, "again");
  EXPECT_EQ(auditpipe::read_text_flags(reinterpret_cast<const std::byte*>(&row),
                                       auditpipe::descriptor_of<AuditRow>().columns[8]),
            0u);
}

}  // namespace
