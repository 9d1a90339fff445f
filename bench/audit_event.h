// The benchmarks' audit record: ten columns, the shape of a typical audit
// table (when, who, what, on what, outcome, how long, from where, detail),
// and a generator of the same rows for every contender.
#pragma once

#include <auditpipe/auditpipe.h>

#include <cstdint>
#include <cstdio>

namespace bench {

struct AuditEvent {
  auditpipe::timestamp at;
  std::int64_t tenant_id = 0;
  std::int64_t user_id = 0;
  auditpipe::fixed_string<32> action;
  auditpipe::fixed_string<64> resource;
  std::int32_t status = 0;
  std::int64_t latency_us = 0;
  auditpipe::fixed_string<40> client_ip;
  auditpipe::fixed_string<36> request_id;
  auditpipe::fixed_string<160> detail;
};

constexpr auto describe(auditpipe::type_tag<AuditEvent>) {
  return auditpipe::table<AuditEvent>(
      "bench_audit", AUDITPIPE_COLUMN(AuditEvent, at), AUDITPIPE_COLUMN(AuditEvent, tenant_id),
      AUDITPIPE_COLUMN(AuditEvent, user_id), AUDITPIPE_COLUMN(AuditEvent, action),
      AUDITPIPE_COLUMN(AuditEvent, resource), AUDITPIPE_COLUMN(AuditEvent, status),
      AUDITPIPE_COLUMN(AuditEvent, latency_us), AUDITPIPE_COLUMN(AuditEvent, client_ip),
      AUDITPIPE_COLUMN(AuditEvent, request_id), AUDITPIPE_COLUMN(AuditEvent, detail));
}

// Row i of the benchmark data set: the same bytes for every contender.
inline void fill_event(AuditEvent& e, std::int64_t i) {
  static const char* const actions[] = {"login", "logout", "read", "write", "delete", "grant"};
  char buf[160];
  e.at = auditpipe::timestamp{1'700'000'000'000'000 + i * 1000};
  e.tenant_id = i % 97;
  e.user_id = i % 100'003;
  e.action = actions[i % 6];
  std::snprintf(buf, sizeof buf, "/tenants/%lld/documents/%lld", static_cast<long long>(i % 97),
                static_cast<long long>(i));
  e.resource = buf;
  e.status = i % 10 == 0 ? 403 : 200;
  e.latency_us = 100 + i % 5000;
  std::snprintf(buf, sizeof buf, "10.%lld.%lld.%lld", static_cast<long long>(i % 256),
                static_cast<long long>(i / 256 % 256), static_cast<long long>(i / 65536 % 256));
  e.client_ip = buf;
  std::snprintf(buf, sizeof buf, "%08llx-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(i), static_cast<unsigned long long>(i * 7919));
  e.request_id = buf;
  std::snprintf(buf, sizeof buf,
                "user %lld performed %s on document %lld; policy evaluated in %lld us; "
                "result recorded for the audit trail",
                static_cast<long long>(i % 100'003), actions[i % 6], static_cast<long long>(i),
                static_cast<long long>(100 + i % 5000));
  e.detail = buf;
}

}  // namespace bench
