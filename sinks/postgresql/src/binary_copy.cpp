// COPY's binary format (binary_copy.h), as PostgreSQL's documentation of
// COPY describes it: an 11-byte signature, flags and header extension
// length; per tuple a 16-bit field count and per field a 32-bit length and
// the value in network byte order; a 16-bit -1 at the end.
#include "binary_copy.h"

#include <bit>
#include <cstring>

namespace auditpipe::postgresql {

namespace {

// pg_type oids.
constexpr std::uint32_t bool_oid = 16, int8_oid = 20, int2_oid = 21, int4_oid = 23, text_oid = 25,
                        float8_oid = 701, varchar_oid = 1043, timestamp_oid = 1114,
                        timestamptz_oid = 1184;

// PostgreSQL's timestamps count microseconds from 2000-01-01; the earliest
// it takes is 4714-11-24 00:00 BC (MIN_TIMESTAMP in its datatype/timestamp.h).
constexpr std::int64_t postgres_epoch_us = 946'684'800'000'000;
constexpr std::int64_t earliest_us = -211'813'488'000'000'000 + postgres_epoch_us;

constexpr std::size_t width(WireType w) {
  switch (w) {
    case WireType::boolean:
      return 1;
    case WireType::int2:
      return 2;
    case WireType::int4:
      return 4;
    case WireType::text:
      return 0;
    default:
      return 8;
  }
}

// Network byte order (big-endian; this code runs on little-endian hosts).
constexpr std::uint8_t to_network(std::uint8_t v) {
  return v;
}
constexpr std::uint16_t to_network(std::uint16_t v) {
  return __builtin_bswap16(v);
}
constexpr std::uint32_t to_network(std::uint32_t v) {
  return __builtin_bswap32(v);
}
constexpr std::uint64_t to_network(std::uint64_t v) {
  return __builtin_bswap64(v);
}
static_assert(std::endian::native == std::endian::little);

class Out {
 public:
  explicit Out(char* p) : p_(p) {}
  template <class T>
  void put(T v) {
    const T be = to_network(v);
    std::memcpy(p_, &be, sizeof be);
    p_ += sizeof be;
  }
  void bytes(const char* data, std::size_t n) {
    std::memcpy(p_, data, n);
    p_ += n;
  }

 private:
  char* p_;
};

}  // namespace

std::optional<WireType> wire_type(ColumnType type, std::uint32_t oid) {
  switch (type) {
    case ColumnType::boolean:
      if (oid == bool_oid) return WireType::boolean;
      return std::nullopt;
    case ColumnType::float64:
      if (oid == float8_oid) return WireType::float8;
      return std::nullopt;
    case ColumnType::timestamp:
      if (oid == timestamptz_oid || oid == timestamp_oid) return WireType::timestamp;
      return std::nullopt;
    case ColumnType::text:
      if (oid == text_oid || oid == varchar_oid) return WireType::text;
      return std::nullopt;
    default:  // the integers: the table check made sure the column is wide enough
      if (oid == int2_oid) return WireType::int2;
      if (oid == int4_oid) return WireType::int4;
      if (oid == int8_oid) return WireType::int8;
      return std::nullopt;
  }
}

bool append_binary_copy(std::string& out, const Batch& batch, const std::vector<WireType>& wire) {
  const auto& columns = batch.table.columns;
  // The size first, so the batch is written with one allocation at most.
  std::size_t fixed = 2 + 2 * (4 + 8);  // field count, the two keys
  for (std::size_t i = 0; i < columns.size(); ++i) fixed += 4 + width(wire[i]);
  std::size_t size = 19 + 2 + fixed * batch.records.size();
  for (const RecordRef& r : batch.records) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (is_null(r.data, columns[i])) {
        size -= width(wire[i]);  // a NULL is its length word (-1) alone: `size` stays exact
        continue;
      }
      if (wire[i] == WireType::text) {
        size += read_text(r.data, columns[i]).size();
      } else if (wire[i] == WireType::timestamp && read_integer(r.data, columns[i]) < earliest_us) {
        return false;
      }
    }
  }
  const std::size_t start = out.size();
  out.resize(start + size);
  Out o(out.data() + start);
  o.bytes("PGCOPY\n\377\r\n\0", 11);
  o.put(std::uint32_t{0});  // flags
  o.put(std::uint32_t{0});  // header extension length
  const auto fields = static_cast<std::uint16_t>(columns.size() + 2);
  for (const RecordRef& r : batch.records) {
    o.put(fields);
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const Column& c = columns[i];
      if (is_null(r.data, c)) {
        o.put(static_cast<std::uint32_t>(-1));  // field length -1: NULL, no value bytes
        continue;
      }
      switch (wire[i]) {
        case WireType::text: {
          const std::string_view v = read_text(r.data, c);
          o.put(static_cast<std::uint32_t>(v.size()));
          o.bytes(v.data(), v.size());
          break;
        }
        case WireType::float8:
          o.put(std::uint32_t{8});
          o.put(std::bit_cast<std::uint64_t>(read_float64(r.data, c)));
          break;
        case WireType::timestamp:
          o.put(std::uint32_t{8});
          o.put(static_cast<std::uint64_t>(read_integer(r.data, c) - postgres_epoch_us));
          break;
        case WireType::boolean:
          o.put(std::uint32_t{1});
          o.put(static_cast<std::uint8_t>(read_integer(r.data, c) != 0));
          break;
        case WireType::int2:
          o.put(std::uint32_t{2});
          o.put(static_cast<std::uint16_t>(read_integer(r.data, c)));
          break;
        case WireType::int4:
          o.put(std::uint32_t{4});
          o.put(static_cast<std::uint32_t>(read_integer(r.data, c)));
          break;
        case WireType::int8:
          o.put(std::uint32_t{8});
          o.put(static_cast<std::uint64_t>(read_integer(r.data, c)));
          break;
      }
    }
    o.put(std::uint32_t{8});
    o.put(static_cast<std::uint64_t>(r.source_id));
    o.put(std::uint32_t{8});
    o.put(static_cast<std::uint64_t>(r.seq));
  }
  o.put(std::uint16_t{0xFFFF});
  return true;
}

}  // namespace auditpipe::postgresql
