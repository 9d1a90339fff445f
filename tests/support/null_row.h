// The record type of the nullable-column tests: a nullable member of every
// column type, and the pattern that fills them, so that each column of a
// batch holds NULLs, zeros or empty strings, and ordinary values.
//
// Who may call: the tests (unit, reliability, every sink's round trip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "auditpipe/column.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/nullable.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"

namespace testing_support {

struct NullRow {
  std::int64_t message_id = 0;
  auditpipe::nullable<auditpipe::timestamp> at;
  auditpipe::nullable<std::int8_t> i8;
  auditpipe::nullable<std::int16_t> i16;
  auditpipe::nullable<std::int32_t> i32;
  auditpipe::nullable<std::int64_t> i64;
  auditpipe::nullable<std::uint8_t> u8;
  auditpipe::nullable<std::uint16_t> u16;
  auditpipe::nullable<std::uint32_t> u32;
  auditpipe::nullable<bool> flag;
  auditpipe::nullable<double> amount;
  auditpipe::nullable<auditpipe::fixed_string<16>> note;
  auditpipe::nullable<auditpipe::fixed_string<64>> detail;
};

constexpr auto describe(auditpipe::type_tag<NullRow>) {
  return auditpipe::table<NullRow>(
      "audit_nulls", AUDITPIPE_COLUMN(NullRow, message_id), AUDITPIPE_COLUMN(NullRow, at),
      AUDITPIPE_COLUMN(NullRow, i8), AUDITPIPE_COLUMN(NullRow, i16), AUDITPIPE_COLUMN(NullRow, i32),
      AUDITPIPE_COLUMN(NullRow, i64), AUDITPIPE_COLUMN(NullRow, u8), AUDITPIPE_COLUMN(NullRow, u16),
      AUDITPIPE_COLUMN(NullRow, u32), AUDITPIPE_COLUMN(NullRow, flag),
      AUDITPIPE_COLUMN(NullRow, amount), AUDITPIPE_COLUMN(NullRow, note),
      AUDITPIPE_COLUMN(NullRow, detail));
}

// The nullable columns of NullRow, in order.
inline constexpr const char* null_row_columns[] = {
    "at", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "flag", "amount", "note", "detail"};
inline constexpr int null_row_column_count = 12;

// What column `c` (an index into null_row_columns) of record `id` holds:
// NULL, the zero value (0, false, "", the epoch), or an ordinary value.
enum class Slot { null, zero, value };
inline Slot slot_of(std::int64_t id, int c) {
  switch ((id + c) % 3) {
    case 0:
      return Slot::null;
    case 1:
      return Slot::zero;
    default:
      return Slot::value;
  }
}

// The ordinary values, as the text a database gives back (timestamps as
// microseconds since the epoch).
inline constexpr std::int64_t null_row_at = 1'764'590'400'123'456;  // 2025-12-01 12:00:00.123456
inline const std::string null_row_note = "it's \\N\t\"x\"";         // quotes, a \N, a tab
inline const std::string null_row_detail = "d\xC3\xA9tail";

// Record `id`, filled by the pattern.
inline NullRow null_row(std::int64_t id) {
  NullRow r;
  r.message_id = id;
  auto fill = [&](int c, auto& member, auto zero, auto value) {
    switch (slot_of(id, c)) {
      case Slot::null:
        member = std::nullopt;
        break;
      case Slot::zero:
        member = zero;
        break;
      case Slot::value:
        member = value;
        break;
    }
  };
  fill(0, r.at, auditpipe::timestamp{0}, auditpipe::timestamp{null_row_at});
  fill(1, r.i8, std::int8_t{0}, std::int8_t{-128});
  fill(2, r.i16, std::int16_t{0}, std::int16_t{32767});
  fill(3, r.i32, std::int32_t{0}, std::int32_t{-2147483647});
  fill(4, r.i64, std::int64_t{0}, std::int64_t{9'007'199'254'740'993});
  fill(5, r.u8, std::uint8_t{0}, std::uint8_t{255});
  fill(6, r.u16, std::uint16_t{0}, std::uint16_t{65535});
  fill(7, r.u32, std::uint32_t{0}, std::uint32_t{4'294'967'295u});
  fill(8, r.flag, false, true);
  fill(9, r.amount, 0.0, -12.625);
  fill(10, r.note, std::string_view(""), std::string_view(null_row_note));
  fill(11, r.detail, std::string_view(""), std::string_view(null_row_detail));
  return r;
}

// The value column `c` of record `id` reads back as, in the common text
// form (integers in decimal, the flag as 0/1, timestamps in microseconds);
// nothing for NULL.
inline std::optional<std::string> null_row_expected(std::int64_t id, int c) {
  const Slot s = slot_of(id, c);
  if (s == Slot::null) return std::nullopt;
  const bool z = s == Slot::zero;
  switch (c) {
    case 0:
      return z ? "0" : std::to_string(null_row_at);
    case 1:
      return z ? "0" : "-128";
    case 2:
      return z ? "0" : "32767";
    case 3:
      return z ? "0" : "-2147483647";
    case 4:
      return z ? "0" : "9007199254740993";
    case 5:
      return z ? "0" : "255";
    case 6:
      return z ? "0" : "65535";
    case 7:
      return z ? "0" : "4294967295";
    case 8:
      return z ? "0" : "1";
    case 9:
      return z ? "0" : "-12.625";
    case 10:
      return z ? "" : null_row_note;
    default:
      return z ? "" : null_row_detail;
  }
}

// How record `b` differs from record `a`, member by member (NULL or not,
// and each present value exactly), through the members themselves rather
// than the descriptor's readers; empty if it does not. A NULL's value bytes
// are nobody's business, so they are not compared.
inline std::string null_row_difference(const std::byte* a_bytes, const std::byte* b_bytes) {
  NullRow a, b;
  std::memcpy(static_cast<void*>(&a), a_bytes, sizeof a);
  std::memcpy(static_cast<void*>(&b), b_bytes, sizeof b);
  std::string out;
  auto same = [&](const char* name, const auto& x, const auto& y) {
    bool equal = x.has_value() == y.has_value();
    if (equal && x.has_value()) {
      if constexpr (std::is_same_v<std::decay_t<decltype(*x)>, double>) {
        equal = std::memcmp(&*x, &*y, sizeof(double)) == 0;
      } else {
        equal = *x == *y;
      }
    }
    if (!equal) out += std::string(out.empty() ? "" : ", ") + name;
  };
  if (a.message_id != b.message_id) out += "message_id";
  same("at", a.at, b.at);
  same("i8", a.i8, b.i8);
  same("i16", a.i16, b.i16);
  same("i32", a.i32, b.i32);
  same("i64", a.i64, b.i64);
  same("u8", a.u8, b.u8);
  same("u16", a.u16, b.u16);
  same("u32", a.u32, b.u32);
  same("flag", a.flag, b.flag);
  same("amount", a.amount, b.amount);
  same("note", a.note, b.note);
  same("detail", a.detail, b.detail);
  return out;
}

}  // namespace testing_support
