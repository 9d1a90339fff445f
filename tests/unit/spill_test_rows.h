// Record types the spill tests share.
//   WideRow: 16 columns of every column type, 2,384 bytes, the shape of the
//            issue-10 report (a row holding ~150 bytes of data in its slot);
//   SmallRow: a few columns, for frame-level damage tests.
#pragma once

#include <cstdint>
#include <cstring>

#include "auditpipe/fixed_string.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"

namespace spill_test {

struct WideRow {
  auditpipe::timestamp at;
  std::int64_t request_id = 0;
  double latency_ms = 0;
  std::int32_t status = 0;
  std::uint32_t bytes_out = 0;
  std::int16_t region = 0;
  std::uint16_t port = 0;
  std::int8_t level = 0;
  std::uint8_t attempt = 0;
  bool ok = false;
  auditpipe::fixed_string<64> host;
  auditpipe::fixed_string<64> user;
  auditpipe::fixed_string<128> action;
  auditpipe::fixed_string<512> resource;
  auditpipe::fixed_string<1024> detail;
  auditpipe::fixed_string<504> trace;
};

constexpr auto describe(auditpipe::type_tag<WideRow>) {
  return auditpipe::table<WideRow>(
      "wide_log", AUDITPIPE_COLUMN(WideRow, at), AUDITPIPE_COLUMN(WideRow, request_id),
      AUDITPIPE_COLUMN(WideRow, latency_ms), AUDITPIPE_COLUMN(WideRow, status),
      AUDITPIPE_COLUMN(WideRow, bytes_out), AUDITPIPE_COLUMN(WideRow, region),
      AUDITPIPE_COLUMN(WideRow, port), AUDITPIPE_COLUMN(WideRow, level),
      AUDITPIPE_COLUMN(WideRow, attempt), AUDITPIPE_COLUMN(WideRow, ok),
      AUDITPIPE_COLUMN(WideRow, host), AUDITPIPE_COLUMN(WideRow, user),
      AUDITPIPE_COLUMN(WideRow, action), AUDITPIPE_COLUMN(WideRow, resource),
      AUDITPIPE_COLUMN(WideRow, detail), AUDITPIPE_COLUMN(WideRow, trace));
}

struct SmallRow {
  std::int64_t id = 0;
  std::int32_t code = 0;
  auditpipe::fixed_string<20> note;
};

constexpr auto describe(auditpipe::type_tag<SmallRow>) {
  return auditpipe::table<SmallRow>("small_log", AUDITPIPE_COLUMN(SmallRow, id),
                                    AUDITPIPE_COLUMN(SmallRow, code),
                                    AUDITPIPE_COLUMN(SmallRow, note));
}

// A record that starts as the table's prototype, padding included, so two
// records with the same fields are the same bytes.
template <class Row>
Row fresh() {
  Row r;
  std::memcpy(static_cast<void*>(&r), auditpipe::descriptor_of<Row>().prototype, sizeof r);
  return r;
}

// A realistic row: ~150 bytes of text in 2,384 bytes of slot.
inline WideRow typical_wide_row(std::int64_t i) {
  WideRow r = fresh<WideRow>();
  r.at = auditpipe::timestamp{1'700'000'000'000'000 + i};
  r.request_id = 1'000'000 + i;
  r.latency_ms = 12.5 + static_cast<double>(i);
  r.status = 200;
  r.bytes_out = 5120;
  r.region = 3;
  r.port = 8443;
  r.level = 2;
  r.attempt = 1;
  r.ok = true;
  r.host = "app-17.eu-west.example";                                     // 22
  r.user = "alice@example.com";                                          // 17
  r.action = "orders.update";                                            // 13
  r.resource = "/api/v2/orders/1234567/items/89";                        // 31
  r.detail = "quantity 3 -> 4; price unchanged; coupon SUMMER applied";  // 55
  r.trace = "4bf92f3577b34da6";                                          // 16
  return r;
}

}  // namespace spill_test
