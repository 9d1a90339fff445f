// The message platform's own message type and its audit record.
//
// SubMessage is what the platform's workers process: it owns std::strings
// like any application type. AuditRow is the fixed-size record auditpipe
// stores; map_fields() says, at compile time, how one becomes the other.
#pragma once

#include <auditpipe/auditpipe.h>

#include <cstdint>
#include <string>

namespace platform {

enum class Delivery : std::int32_t { delivered = 0, deferred = 1, bounced = 2 };

struct SubMessage {
  std::int64_t message_id = 0;
  std::int64_t conversation_id = 0;
  std::string sender;
  std::string receiver;
  Delivery status = Delivery::delivered;
  std::int64_t latency_us = 0;
  std::int32_t worker = 0;
  std::string payload;  // ~120 bytes of message text
};

struct AuditRow {
  auditpipe::timestamp at;
  std::int64_t message_id = 0;
  std::int64_t conversation_id = 0;
  auditpipe::fixed_string<48> sender;
  auditpipe::fixed_string<48> receiver;
  std::int32_t status = 0;
  std::int64_t latency_us = 0;
  std::int32_t worker = 0;
  auditpipe::fixed_string<160> payload;
};

constexpr auto describe(auditpipe::type_tag<AuditRow>) {
  return auditpipe::table<AuditRow>(
      "message_audit", AUDITPIPE_COLUMN(AuditRow, at), AUDITPIPE_COLUMN(AuditRow, message_id),
      AUDITPIPE_COLUMN(AuditRow, conversation_id), AUDITPIPE_COLUMN(AuditRow, sender),
      AUDITPIPE_COLUMN(AuditRow, receiver), AUDITPIPE_COLUMN(AuditRow, status),
      AUDITPIPE_COLUMN(AuditRow, latency_us), AUDITPIPE_COLUMN(AuditRow, worker),
      AUDITPIPE_COLUMN(AuditRow, payload));
}

constexpr auto map_fields(auditpipe::type_tag<SubMessage>, auditpipe::type_tag<AuditRow>) {
  return auditpipe::mapping(
      auditpipe::stamp_now(&AuditRow::at),
      auditpipe::field(&SubMessage::message_id, &AuditRow::message_id),
      auditpipe::field(&SubMessage::conversation_id, &AuditRow::conversation_id),
      auditpipe::field(&SubMessage::sender, &AuditRow::sender),
      auditpipe::field(&SubMessage::receiver, &AuditRow::receiver),
      auditpipe::field(&SubMessage::status, &AuditRow::status),
      auditpipe::field(&SubMessage::latency_us, &AuditRow::latency_us),
      auditpipe::field(&SubMessage::worker, &AuditRow::worker),
      auditpipe::field(&SubMessage::payload, &AuditRow::payload));
}

}  // namespace platform
