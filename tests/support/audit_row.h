// The record type the tests share: one column of every kind.
#pragma once

#include <cstdint>

#include "auditpipe/fixed_string.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"

namespace testing_support {

struct AuditRow {
  auditpipe::timestamp at;
  std::int64_t message_id = 0;
  std::int32_t status = 0;
  std::uint16_t channel = 0;
  double latency_ms = 0;
  bool delivered = false;
  auditpipe::fixed_string<32> sender;
  auditpipe::fixed_string<32> receiver;
  auditpipe::fixed_string<128> payload;
};

constexpr auto describe(auditpipe::type_tag<AuditRow>) {
  return auditpipe::table<AuditRow>(
      "audit_log", AUDITPIPE_COLUMN(AuditRow, at), AUDITPIPE_COLUMN(AuditRow, message_id),
      AUDITPIPE_COLUMN(AuditRow, status), AUDITPIPE_COLUMN(AuditRow, channel),
      AUDITPIPE_COLUMN(AuditRow, latency_ms), AUDITPIPE_COLUMN(AuditRow, delivered),
      AUDITPIPE_COLUMN(AuditRow, sender), AUDITPIPE_COLUMN(AuditRow, receiver),
      AUDITPIPE_COLUMN(AuditRow, payload));
}

}  // namespace testing_support
