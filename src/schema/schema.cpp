// The schema room: runtime table descriptions (auditpipe::Schema) and the
// DynamicLogger's compiled half.
//
// It owns the checks a runtime table gets in place of table()'s compile-time
// ones (the same functions, table.h's detail::is_identifier and same_name,
// run at construction) and the record layout a compiled struct of the same
// columns would have, so the engine, the sinks and the spill file cannot
// tell a runtime record from a compiled one.
//
// Who may call: the public API (schema.h, dynamic_logger.h) and nothing in
// the engine: the pipeline only ever sees the TableDescriptor.
#include "auditpipe/schema.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "auditpipe/detail/shown_name.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/nullable.h"
#include "auditpipe/status.h"
#include "auditpipe/table.h"

namespace auditpipe {

namespace {

constexpr std::uint32_t max_text_length = 1u << 24;  // fixed_string<N>'s limit

struct Shape {
  std::uint32_t size;
  std::uint32_t align;
};

// sizeof and alignof the member a compiled record would declare for the
// column: T, or nullable<T> (T, then its presence byte, padded to T's
// alignment).
constexpr Shape value_shape(ColumnType type, std::uint32_t max_length) {
  switch (type) {
    case ColumnType::boolean:
      return {sizeof(bool), alignof(bool)};
    case ColumnType::int8:
    case ColumnType::uint8:
      return {1, 1};
    case ColumnType::int16:
    case ColumnType::uint16:
      return {2, 2};
    case ColumnType::int32:
    case ColumnType::uint32:
      return {4, 4};
    case ColumnType::int64:
      return {sizeof(std::int64_t), alignof(std::int64_t)};
    case ColumnType::float64:
      return {sizeof(double), alignof(double)};
    case ColumnType::timestamp:
      return {sizeof(timestamp), alignof(timestamp)};
    case ColumnType::text: {
      constexpr std::uint32_t a = alignof(fixed_string<1>);
      return {static_cast<std::uint32_t>((text_layout::data_offset + max_length + a - 1) / a * a),
              a};
    }
  }
  return {0, 1};
}

constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t a) {
  return (n + a - 1) / a * a;
}

// The formulas above are the compiler's.
static_assert(value_shape(ColumnType::text, 5).size == sizeof(fixed_string<5>));
static_assert(value_shape(ColumnType::text, 8).size == sizeof(fixed_string<8>));
static_assert(value_shape(ColumnType::timestamp, 0).size == sizeof(timestamp));
static_assert(nullable_layout<fixed_string<5>>::presence_offset == sizeof(fixed_string<5>));
static_assert(sizeof(nullable<fixed_string<5>>) == round_up(sizeof(fixed_string<5>) + 1, 4));
static_assert(sizeof(nullable<std::int16_t>) == 4 && alignof(nullable<std::int16_t>) == 2);
static_assert(nullable_layout<double>::presence_offset == 8 && sizeof(nullable<double>) == 16);

bool known_type(ColumnType type) {
  switch (type) {
    case ColumnType::boolean:
    case ColumnType::int8:
    case ColumnType::int16:
    case ColumnType::int32:
    case ColumnType::int64:
    case ColumnType::uint8:
    case ColumnType::uint16:
    case ColumnType::uint32:
    case ColumnType::float64:
    case ColumnType::timestamp:
    case ColumnType::text:
      return true;
  }
  return false;
}

}  // namespace

struct Schema::Layout {
  std::string table;
  std::vector<ColumnSpec> specs;
  std::vector<Column> columns;  // names view specs' strings: this Layout never moves
  std::unique_ptr<std::byte[]> prototype;
  TableDescriptor descriptor{};

  Layout(std::string name, std::vector<ColumnSpec> given)
      : table(std::move(name)), specs(std::move(given)) {
    auto fail = [&](const std::string& what) {
      throw error("auditpipe: schema for table \"" + detail::shown_name(table) + "\": " + what);
    };
    auto fail_column = [&](const ColumnSpec& c, const std::string& what) {
      fail("column \"" + detail::shown_name(c.name) + "\": " + what);
    };
    if (!detail::is_identifier(table)) {
      fail(
          "the table name is not a plain SQL identifier (letters, digits, _; at most 64 "
          "characters)");
    }
    if (specs.empty()) fail("a table needs at least one column");
    std::uint64_t offset = 0;
    std::uint32_t align = 1;
    columns.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const ColumnSpec& c = specs[i];
      if (!detail::is_identifier(c.name)) {
        fail_column(c,
                    "the name is not a plain SQL identifier (letters, digits, _; at most 64 "
                    "characters)");
      }
      if (detail::same_name(c.name, source_id_column) || detail::same_name(c.name, seq_column)) {
        fail_column(c, "source_id and seq are reserved column names (every table gets them)");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (detail::same_name(c.name, specs[j].name)) {
          fail_column(c, "the name is already column \"" + specs[j].name +
                             "\"'s (names are compared ignoring case)");
        }
      }
      if (!known_type(c.type)) {
        fail_column(c, "unknown column type " + std::to_string(static_cast<unsigned>(c.type)));
      }
      if (c.type == ColumnType::text) {
        if (c.max_length == 0 || c.max_length > max_text_length) {
          fail_column(c,
                      "a text column's max_length must be from 1 to 16777216 bytes (16 MiB), "
                      "not " +
                          std::to_string(c.max_length));
        }
        if (c.max_chars > c.max_length) {
          fail_column(c, "max_chars (" + std::to_string(c.max_chars) +
                             ") cannot be more than max_length (" + std::to_string(c.max_length) +
                             " bytes): a character takes at least a byte");
        }
      } else if (c.max_length != 0 || c.max_chars != 0) {
        fail_column(c, std::string(c.max_length != 0 ? "max_length" : "max_chars") +
                           " is for text columns only (this one is " +
                           std::string(to_string(c.type)) + ")");
      }
      const Shape value = value_shape(c.type, c.max_length);
      const std::uint64_t member_size =
          c.nullable ? round_up(std::uint64_t{value.size} + 1, value.align) : value.size;
      offset = round_up(offset, value.align);
      Column column{c.name,
                    c.type,
                    static_cast<std::uint32_t>(offset),
                    value.size,
                    c.max_length,
                    c.nullable,
                    c.nullable ? static_cast<std::uint32_t>(offset + value.size) : 0u,
                    c.max_chars};
      columns.push_back(column);
      offset += member_size;
      align = std::max(align, value.align);
      if (offset + 64 > std::numeric_limits<std::uint32_t>::max()) {
        fail_column(c, "the record would be larger than 4 GiB (a descriptor's sizes are 32-bit)");
      }
    }
    const std::uint64_t record_size = round_up(offset, align);
    // Zeros: every column's default (0, false, the epoch, empty text with no
    // flags) and NULL for nullable ones, as a value-initialized record.
    prototype = std::make_unique<std::byte[]>(record_size);
    descriptor = TableDescriptor{table, std::span<const Column>(columns.data(), columns.size()),
                                 static_cast<std::uint32_t>(record_size), align, prototype.get()};
  }
};

Schema::Schema(std::string table, std::vector<ColumnSpec> columns)
    : layout_(new Layout(std::move(table), std::move(columns))) {}

Schema::Schema(const Schema& other)
    : layout_(other.layout_ ? new Layout(other.layout_->table, other.layout_->specs) : nullptr) {}

Schema& Schema::operator=(const Schema& other) {
  if (this != &other) {
    Layout* copy = other.layout_ ? new Layout(other.layout_->table, other.layout_->specs) : nullptr;
    delete layout_;
    layout_ = copy;
  }
  return *this;
}

Schema::Schema(Schema&& other) noexcept : layout_(std::exchange(other.layout_, nullptr)) {}

Schema& Schema::operator=(Schema&& other) noexcept {
  if (this != &other) {
    delete layout_;
    layout_ = std::exchange(other.layout_, nullptr);
  }
  return *this;
}

Schema::~Schema() {
  delete layout_;
}

// A moved-from Schema describes nothing: an empty name, no columns.
const TableDescriptor& Schema::descriptor() const noexcept {
  static const TableDescriptor none{{}, {}, 0, 1, nullptr};
  return layout_ ? layout_->descriptor : none;
}

std::string_view Schema::table() const noexcept {
  return layout_ ? std::string_view(layout_->table) : std::string_view();
}

const std::vector<ColumnSpec>& Schema::columns() const noexcept {
  static const std::vector<ColumnSpec> none;
  return layout_ ? layout_->specs : none;
}

std::optional<std::size_t> Schema::find(std::string_view name) const noexcept {
  if (layout_ == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < layout_->specs.size(); ++i) {
    if (detail::same_name(layout_->specs[i].name, name)) return i;
  }
  return std::nullopt;
}

}  // namespace auditpipe
