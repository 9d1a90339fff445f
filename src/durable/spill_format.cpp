#include "durable/spill_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace auditpipe::internal {

std::string segment_name(std::uint64_t number) {
  char name[40];
  std::snprintf(name, sizeof name, "spill-%016llu.seg", static_cast<unsigned long long>(number));
  return name;
}

std::uint64_t segment_number(std::string_view name) {
  constexpr std::string_view prefix = "spill-", suffix = ".seg";
  if (name.size() != prefix.size() + 16 + suffix.size() ||
      name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return 0;
  }
  std::uint64_t n = 0;
  for (char ch : name.substr(prefix.size(), 16)) {
    if (ch < '0' || ch > '9') return 0;
    n = n * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return n;
}

namespace {

// The most bytes a varint of a 32-bit value takes.
constexpr std::size_t max_varint32 = 5;

std::byte* put_varint(std::byte* out, std::uint32_t v) noexcept {
  while (v >= 0x80) {
    *out++ = static_cast<std::byte>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<std::byte>(v);
  return out;
}

// Reads a varint of at most 32 bits from [p, end); false if it runs past
// the end or is longer than a 32-bit value can be.
bool get_varint(const std::byte*& p, const std::byte* end, std::uint32_t& v) noexcept {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < max_varint32; ++i) {
    if (p == end) return false;
    const auto b = static_cast<std::uint8_t>(*p++);
    value |= std::uint64_t{b & 0x7Fu} << (7 * i);
    if ((b & 0x80u) == 0) {
      if (value > 0xFFFFFFFFu) return false;
      v = static_cast<std::uint32_t>(value);
      return true;
    }
  }
  return false;
}

std::uint32_t load32(const std::byte* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

RecordCodec::RecordCodec(const TableDescriptor& table) : table_(table) {
  for (const Column& c : table_.columns) {
    max_encoded_size_ += (c.nullable ? 1 : 0) +
                         (c.type == ColumnType::text ? 2 * max_varint32 + c.max_length : c.size);
    // A NULL is its presence byte alone.
    min_encoded_size_ += c.nullable ? 1 : c.type == ColumnType::text ? 1 : c.size;
  }
}

std::size_t RecordCodec::encode(const std::byte* record, std::byte* out) const noexcept {
  std::byte* const start = out;
  for (const Column& c : table_.columns) {
    const std::byte* field = record + c.offset;
    if (c.nullable) {
      const bool present = !is_null(record, c);
      *out++ = std::byte{present ? std::uint8_t{1} : std::uint8_t{0}};
      if (!present) continue;
    }
    if (c.type != ColumnType::text) {
      std::memcpy(out, field, c.size);
      out += c.size;
      continue;
    }
    std::uint32_t length = load32(field + text_layout::size_offset);
    if (length > c.max_length) length = c.max_length;
    const std::uint32_t flags = load32(field + text_layout::flags_offset);
    out = put_varint(out, length << 1 | (flags != 0 ? 1u : 0u));
    if (flags != 0) out = put_varint(out, flags);
    std::memcpy(out, field + text_layout::data_offset, length);
    out += length;
  }
  return static_cast<std::size_t>(out - start);
}

bool RecordCodec::decode(std::span<const std::byte> in, std::byte* record) const noexcept {
  const std::byte* p = in.data();
  const std::byte* const end = p + in.size();
  if (record != nullptr) std::memcpy(record, table_.prototype, table_.record_size);
  for (const Column& c : table_.columns) {
    if (c.nullable) {
      if (p == end) return false;
      const auto presence = static_cast<std::uint8_t>(*p++);
      if (presence > 1) return false;
      if (record != nullptr) record[c.presence_offset] = std::byte{presence};
      if (presence == 0) continue;
    }
    if (c.type != ColumnType::text) {
      if (static_cast<std::size_t>(end - p) < c.size) return false;
      if (record != nullptr) std::memcpy(record + c.offset, p, c.size);
      p += c.size;
      continue;
    }
    std::uint32_t head = 0, flags = 0;
    if (!get_varint(p, end, head)) return false;
    const std::uint32_t length = head >> 1;
    if (length > c.max_length) return false;
    if ((head & 1u) != 0 && !get_varint(p, end, flags)) return false;
    if (static_cast<std::size_t>(end - p) < length) return false;
    if (record != nullptr) {
      std::byte* field = record + c.offset;
      std::memcpy(field + text_layout::size_offset, &length, sizeof length);
      std::memcpy(field + text_layout::flags_offset, &flags, sizeof flags);
      std::memcpy(field + text_layout::data_offset, p, length);
    }
    p += length;
  }
  return p == end;
}

std::filesystem::path replay_progress_path(const std::filesystem::path& segment) {
  return std::filesystem::path(segment.string() + ".replayed");
}

std::uint64_t read_replay_progress(const std::filesystem::path& segment) {
  const int fd = ::open(replay_progress_path(segment).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  std::uint64_t v = 0;
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == '\n') break;
    if (buf[i] < '0' || buf[i] > '9') return 0;
    v = v * 10 + static_cast<std::uint64_t>(buf[i] - '0');
  }
  return v;
}

bool write_replay_progress(const std::filesystem::path& segment, std::uint64_t records) {
  const std::filesystem::path target = replay_progress_path(segment);
  const std::filesystem::path temp(target.string() + ".tmp");
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string text = std::to_string(records) + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fdatasync(fd) == 0;
  ::close(fd);
  return ok && ::rename(temp.c_str(), target.c_str()) == 0;
}

}  // namespace auditpipe::internal
