#include "writer/record_finisher.h"

#include <cstring>
#include <string_view>

#include "auditpipe/fixed_string.h"
#include "auditpipe/utf8.h"

namespace auditpipe::internal {

RecordFinisher::RecordFinisher(const TableDescriptor& table, bool sink_accepts_nul,
                               Counters& counters)
    : no_nul_(!sink_accepts_nul), counters_(counters) {
  for (const Column& c : table.columns) {
    if (c.type == ColumnType::timestamp) timestamp_columns_.push_back(&c);
    if (c.type == ColumnType::text) text_columns_.push_back(&c);
  }
}

TscClock::Snapshot RecordFinisher::clock() const {
  return timestamp_columns_.empty() ? TscClock::Snapshot{} : TscClock::snapshot();
}

void RecordFinisher::finish(std::byte* record, const TscClock::Snapshot& clock) const noexcept {
  if (!timestamp_columns_.empty()) resolve_timestamps(record, timestamp_columns_, clock);
  unsigned truncated = 0;
  unsigned from_null = 0;
  for (const Column* c : text_columns_) {
    // A NULL has no text: its bytes (stale, or the prototype's) are never
    // validated, repaired or counted.
    if (is_null(record, *c)) continue;
    repair_text(record, *c);
    const std::uint32_t flags = read_text_flags(record, *c);
    const bool cut =
        (flags & (text_flags::truncated | text_flags::cut_counted)) == text_flags::truncated;
    if (cut || (flags & text_flags::from_null) != 0) {
      // Counted once: a record finished again (replayed from a spill
      // segment) is not counted twice.
      truncated += cut;
      from_null += (flags & text_flags::from_null) != 0;
      const std::uint32_t marked =
          (flags & ~text_flags::from_null) | (cut ? text_flags::cut_counted : 0u);
      std::memcpy(record + c->offset + text_layout::flags_offset, &marked, sizeof marked);
    }
  }
  if (truncated != 0) counters_.truncated_fields.fetch_add(truncated, std::memory_order_relaxed);
  if (from_null != 0) counters_.null_text_fields.fetch_add(from_null, std::memory_order_relaxed);
}

void RecordFinisher::repair_text(std::byte* record, const Column& c) const noexcept {
  std::byte* field = record + c.offset;
  const std::string_view text = read_text(record, c);
  const bool has_nul = no_nul_ && text.find('\0') != std::string_view::npos;
  const bool valid = is_valid_utf8(text);
  // Valid text over a limit of characters (written through data(), or a
  // record kept under a schema with a larger limit) is cut below too.
  const bool over_chars = c.max_chars != 0 && utf8_prefix_chars(text, c.max_chars) < text.size();
  if (valid && !has_nul && !over_chars) return;
  char* data = reinterpret_cast<char*>(field + text_layout::data_offset);
  std::uint32_t flags = read_text_flags(record, c);
  std::size_t size = text.size();
  bool cut = false;
  if (!valid) {
    size = repair_utf8(data, size, c.max_length, &cut);
    flags |= text_flags::invalid_utf8;
    counters_.invalid_utf8_fields.fetch_add(1, std::memory_order_relaxed);
  }
  if (has_nul) {
    bool nul_cut = false;
    size = replace_nul(data, size, c.max_length, &nul_cut);
    cut = cut || nul_cut;
    counters_.nul_replaced_fields.fetch_add(1, std::memory_order_relaxed);
  }
  // A repaired sequence may count as more characters than its bytes did (a
  // stray continuation byte becomes U+FFFD).
  if (c.max_chars != 0 && size > c.max_chars) {
    const std::size_t chars = utf8_prefix_chars(std::string_view(data, size), c.max_chars);
    cut = cut || chars < size;
    size = chars;
  }
  if (cut) flags |= text_flags::truncated;
  const auto size32 = static_cast<std::uint32_t>(size);
  std::memcpy(field + text_layout::size_offset, &size32, sizeof size32);
  std::memcpy(field + text_layout::flags_offset, &flags, sizeof flags);
}

}  // namespace auditpipe::internal
